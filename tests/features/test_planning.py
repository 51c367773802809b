"""The plan and its refusals as pure functions of the actual state (no cloud: the state is given)."""

from __future__ import annotations

import pytest

from features.catalog import NAMES
from features.planning import resolve
from features.readers.state import Actual, ClusterState
from tests.factories import ClusterFactory, InstanceGroupFactory

pytestmark = [pytest.mark.django_db]


def _state(*enabled: str, hyperpod: dict | None = None) -> ClusterState:
    features = {n: Actual(enabled=True, status="enabled") if n in enabled else Actual() for n in NAMES}
    return ClusterState(features=features, hyperpod=hyperpod or {"NodeRecovery": "Automatic"})


def _request(**values) -> dict:
    return {name: {"enabled": on, "settings": {}} for name, on in values.items()}


def test_enabling_installs_missing_requirements_first(team):
    cluster = ClusterFactory(team=team, hyperpod_cluster_name="hp")
    plan, errors = resolve(cluster, _state("pod_identity_agent"), {}, _request(training_operator=True))
    assert errors == {}
    assert [(a["feature"], a["action"]) for a in plan.actions] == [
        ("cert_manager", "enable"),
        ("training_operator", "enable"),
    ]
    assert plan.auto_installed == {"cert_manager"}


def test_a_required_dependency_cannot_go_alone_but_can_go_with_its_feature(team):
    cluster = ClusterFactory(team=team, hyperpod_cluster_name="hp")
    state = _state("pod_identity_agent", "cert_manager", "training_operator")
    _, errors = resolve(cluster, state, {}, _request(cert_manager=False))
    assert "training_operator" in errors["cert_manager"][0]
    plan, errors = resolve(cluster, state, {}, _request(cert_manager=False, training_operator=False))
    assert errors == {}
    assert [a["feature"] for a in plan.actions] == ["training_operator", "cert_manager"]  # dependents first


def test_features_that_need_hyperpod_or_on_demand_groups_say_why(team):
    eks_only = ClusterFactory(team=team, name="eks-only", hyperpod_cluster_name="")
    _, errors = resolve(eks_only, _state(), {}, _request(tiered_checkpointing=True))
    assert "needs a HyperPod cluster" in errors["tiered_checkpointing"][0]
    spot_only = ClusterFactory(team=team, name="spot-only", hyperpod_cluster_name="hp")
    InstanceGroupFactory(cluster=spot_only, capacity_type="spot")
    _, errors = resolve(spot_only, _state(), {}, _request(autoscaling=True))
    assert "on-demand instance group" in errors["autoscaling"][0]
    no_recovery = ClusterFactory(team=team, name="manual", hyperpod_cluster_name="hp")
    InstanceGroupFactory(cluster=no_recovery)
    _, errors = resolve(no_recovery, _state(hyperpod={"NodeRecovery": "None"}), {}, _request(autoscaling=True))
    assert "node recovery Automatic" in errors["autoscaling"][0]


def test_a_locked_toggle_says_why():
    from features.views.panel import _why_locked

    rows = {
        "cert_manager": {
            "title": "cert-manager",
            "enabled": True,
            "available": True,
            "required_by": ["training_operator"],
        },
        "training_operator": {
            "title": "HyperPod training operator",
            "enabled": True,
            "available": True,
            "required_by": [],
        },
        "tiered_checkpointing": {
            "title": "Managed tiered checkpointing",
            "enabled": False,
            "available": False,
            "detail": "needs a HyperPod cluster",
            "required_by": [],
        },
    }
    assert _why_locked(rows["cert_manager"], rows, True, None).startswith("Required by HyperPod training operator")
    assert _why_locked(rows["tiered_checkpointing"], rows, True, None) == (
        "Managed tiered checkpointing needs a HyperPod cluster."
    )
    assert _why_locked(rows["training_operator"], rows, False, None) == "Only team admins can change features."
    assert _why_locked(rows["training_operator"], rows, True, object()).startswith("Features are changing")
    assert _why_locked(rows["training_operator"], rows, True, None) == ""
