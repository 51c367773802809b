"""The Inference pages without a cloud behind them: where Endpoints leads, who sees the forms."""

from __future__ import annotations

from django.urls import reverse

from clusters.models import ActiveCluster
from tests.factories import ClusterFactory, InstanceGroupFactory


def test_endpoints_leads_to_the_active_clusters_inference_page(team, admin_user, admin_client):
    response = admin_client.get(reverse("portal:endpoints"))
    assert response.status_code == 302 and response.url == reverse("portal:clusters")
    cluster = ClusterFactory(team=team, name="serve")
    InstanceGroupFactory(cluster=cluster, name="gpu")
    ActiveCluster.objects.create(user=admin_user, team=team, cluster=cluster)
    response = admin_client.get(reverse("portal:endpoints"))
    assert response.status_code == 302 and response.url == reverse("portal:inference", args=[cluster.pk])
    page = admin_client.get(response.url)
    assert page.status_code == 200
    assert b"Inference on serve" in page.content and b'id="deploy-form"' in page.content
    assert b'<option value="gpu"' in page.content
    models = admin_client.get(reverse("portal:inference_models", args=[cluster.pk]))
    assert models.status_code == 200 and b"Download from Hugging Face" in models.content


def test_viewers_see_endpoints_but_no_forms(team, viewer_client):
    cluster = ClusterFactory(team=team, name="serve")
    page = viewer_client.get(reverse("portal:inference", args=[cluster.pk]))
    assert page.status_code == 200 and b'id="deploy-form"' not in page.content
    assert viewer_client.post(reverse("portal:inference", args=[cluster.pk]), {"name": "x"}).status_code == 403
    models = viewer_client.get(reverse("portal:inference_models", args=[cluster.pk]))
    assert b"Download from Hugging Face" not in models.content


def test_a_form_error_is_shown_at_its_field_and_nothing_is_recorded(team, member_client):
    cluster = ClusterFactory(team=team, name="serve")
    InstanceGroupFactory(cluster=cluster, name="gpu")
    response = member_client.post(
        reverse("portal:inference", args=[cluster.pk]),
        {"name": "Bad Name", "model": "Qwen/Qwen3-0.6B", "instance_group": "gpu", "engine": "vllm", "router": "on"},
    )
    assert response.status_code == 400
    assert b"1 to 30 characters: lowercase letters" in response.content
    assert not cluster.endpoints.exists()
