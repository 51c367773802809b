"""features.update under trouble (real workers, sandbox): a worker killed in every phase, a failed add-on
retried, an add-on deleted out of band (drift, in the cluster's drift too)."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from instantstart.cloud.aws import team_cloud
from instantstart.operations import engine
from instantstart.operations.models import Operation
from tests.clusters.helpers import add_fault, wait_for_operation
from tests.features.helpers import active_cluster, features_of, mutating_calls
from tests.support import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]


def _speedup(sandbox, value: float) -> None:
    request = urllib.request.Request(
        f"{sandbox.aws_endpoint}/_sandbox/speedup",
        data=json.dumps({"speedup": value}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(request, timeout=5).read()


def test_a_worker_killed_in_every_phase_completes_with_each_create_issued_once(
    admin_api, team, start_worker, sandbox, settings
):
    settings.OPERATIONS = {**settings.OPERATIONS, "LEASE_SECONDS": 3}
    creator = start_worker()
    cluster = active_cluster(admin_api, "chaos")
    creator.kill()  # from here on, each worker dies inside a phase
    before = mutating_calls(sandbox, team)
    _speedup(sandbox, 50)  # add-ons take seconds, not milliseconds: there is time to die inside a phase
    try:
        request = {"training_operator": True, "keda": True, "observability": True}
        response = admin_api.patch(f"/api/v1/clusters/{cluster.pk}/features/", request, format="json")
        assert response.status_code == 202, response.json()
        operation_id = response.json()["operation"]["id"]
        planned = [f"{a['action']}_{a['feature']}" for a in response.json()["plan"]]
        interrupted: list[str] = []
        deadline = time.monotonic() + 240
        while not Operation.objects.get(pk=operation_id).is_terminal:
            assert time.monotonic() < deadline, f"not finished; interrupted in {interrupted}"
            worker = start_worker()

            def inside_a_phase() -> str | bool:
                engine.sweep()  # what beat does: hand the dead worker's operation to the live one
                op = Operation.objects.get(pk=operation_id)
                phase = op.current_phase()
                if op.is_terminal:
                    return "-"
                if phase is not None and phase.state and phase.name not in interrupted:
                    return phase.name  # it recorded a created id: now die before the phase ends
                return False

            name = wait_until(inside_a_phase, timeout=120, interval=0.05, message="a phase to record its first id")
            worker.kill()
            interrupted.append(name)
        wait_for_operation(operation_id)
    finally:
        _speedup(sandbox, 1000)
    print("interrupted in", interrupted)
    assert set(planned) <= set(interrupted), interrupted
    made = {a: n - before.get(a, 0) for a, n in mutating_calls(sandbox, team).items() if "Create" in a}
    made = {a: n for a, n in made.items() if n}
    assert made == {
        "eks:CreateAddon": 3,  # cert-manager, training operator, CloudWatch observability
        "iam:CreateRole": 3,  # training operator, KEDA, observability
        "eks:CreatePodIdentityAssociation": 3,
    }, interrupted
    on = features_of(admin_api, cluster)
    assert all(on[n]["status"] == "enabled" for n in request)


def test_failed_add_on_retry_and_out_of_band_delete_is_drift(admin_api, team, start_worker, sandbox):
    start_worker()
    cluster = active_cluster(admin_api, "drifty")
    url = f"/api/v1/clusters/{cluster.pk}/features/"
    add_fault(sandbox, kind="addon_create_failed", addon="amazon-cloudwatch-observability")
    response = admin_api.patch(url, {"observability": True}, format="json")
    op = wait_for_operation(response.json()["operation"]["id"], statuses=("failed",))
    assert op.error_code == "AddonFailed" and "CREATE_FAILED" in op.error_message
    assert features_of(admin_api, cluster)["observability"]["status"] == "failed"
    assert admin_api.post(f"/api/v1/operations/{op.pk}/retry/").status_code == 202
    wait_for_operation(op.pk)  # the failed add-on was deleted and created again
    assert features_of(admin_api, cluster)["observability"]["status"] == "enabled"

    # Someone runs `aws eks delete-addon`: actual false, desired true, drift — in the cluster's drift too.
    eks = team_cloud(team, "us-west-2").client("eks")
    eks.delete_addon(clusterName=cluster.eks_cluster_name, addonName="amazon-cloudwatch-observability")
    wait_until(
        lambda: not features_of(admin_api, cluster)["observability"]["enabled"], timeout=30, message="add-on gone"
    )
    row = features_of(admin_api, cluster)["observability"]
    assert (row["enabled"], row["desired"], row["drift"]) == (False, True, True)
    drift = admin_api.get(f"/api/v1/clusters/{cluster.pk}/drift/").json()
    assert drift["in_sync"] is False
    assert {"resource": "feature/observability", "field": "enabled", "recorded": True, "actual": False} in drift[
        "differences"
    ]
    # The cluster's reconcile puts it back with a features.update of just that feature.
    reconcile = admin_api.post(f"/api/v1/clusters/{cluster.pk}/reconcile/")
    assert reconcile.status_code == 202
    wait_for_operation(reconcile.json()["id"])
    repair = Operation.objects.filter(kind="features.update").order_by("-created_at").first()
    assert [p.name for p in repair.phases.order_by("index")] == ["enable_observability"]
    assert features_of(admin_api, cluster)["observability"]["drift"] is False
    assert admin_api.get(f"/api/v1/clusters/{cluster.pk}/drift/").json()["in_sync"] is True

    # Deleting the cluster with a feature on takes the feature's role too (its add-on goes with EKS).
    deleted = admin_api.delete(f"/api/v1/clusters/{cluster.pk}/")
    assert "features" in [p["name"] for p in deleted.json()["operation"]["phases"]]
    wait_for_operation(deleted.json()["operation"]["id"])
    iam = team_cloud(team, "us-west-2").client("iam")
    assert not [r["RoleName"] for r in iam.list_roles()["Roles"] if r["RoleName"].startswith(cluster.resource_prefix)]
