"""The HyperPod controller tick: node transitions, health faults, finishing cluster operations, and the
node set handed to the Kubernetes half.
"""

from __future__ import annotations

from typing import Any

from sandbox.aws.addresses import grow_pod_pool, kube_addresses
from sandbox.aws.hyperpod import settings
from sandbox.aws.hyperpod.capacity import new_node, plan_usage, remove_all, remove_node, security_groups
from sandbox.aws.hyperpod.store import event, table
from sandbox.aws.world import World


def tick_hyperpod(world: World) -> None:
    now = world.now()
    plan_usage(world)
    for account, region, tbl in world.tables("hp_clusters"):
        for name, c in list(tbl.items()):
            # one cluster whose records break the tick must not hold up the others
            key = ("hyperpod", account, region, name)
            world.contained.run(key, _tick_cluster, world, account, region, tbl, name, c, now)


def _tick_cluster(
    world: World, account: str, region: str, tbl: dict[str, Any], name: str, c: dict[str, Any], now: float
) -> None:
    _tick_nodes(world, account, region, c, now)
    if c.get("_due") is not None and now >= c["_due"]:
        _finish_op(world, account, region, tbl, name, c, now)


def _tick_nodes(world: World, account: str, region: str, c: dict[str, Any], now: float) -> None:
    for iid, n in list(c["_nodes"].items()):
        op = n["_op"]
        if op and n["_op_due"] is not None and now >= n["_op_due"]:
            world.touch()
            if op == "reboot":
                n.update({"Status": "Running", "Message": "", "_op": None, "_op_due": None, "_health": "Schedulable"})
                event(world, c, f"Node {iid} rebooted.", rtype="Instance", group=n["InstanceGroupName"], instance=iid)
            elif op == "replace":
                remove_node(world, account, region, c, iid)
                g = c["_groups"].get(n["InstanceGroupName"])
                if g is not None:
                    dur = world.due("hp_node_replace", 0.7) - now
                    new = new_node(world, account, region, c, g, n["_subnet"], now, now + dur, n["NodeLogicalId"])
                    if new is None:
                        event(
                            world,
                            c,
                            f"Node {iid} could not be replaced: no free addresses in subnet {n['_subnet']}.",
                            "Error",
                            "Instance",
                            n["InstanceGroupName"],
                            iid,
                        )
                        continue
                    event(
                        world,
                        c,
                        f"Node {iid} replaced by {new['InstanceId']}.",
                        rtype="Instance",
                        group=n["InstanceGroupName"],
                        instance=new["InstanceId"],
                    )
            elif op == "delete":
                remove_node(world, account, region, c, iid)
                event(world, c, f"Node {iid} terminated.", rtype="Instance", group=n["InstanceGroupName"], instance=iid)
            continue
        if n["Status"] == "Pending" and op is None:
            if n.get("_dhc_at") and now >= n["_dhc_at"] and now < n["_ready_at"]:
                n["Status"], n["_dhc"] = "DeepHealthCheckInProgress", "InProgress"
                world.touch()
            elif now >= n["_ready_at"]:
                _node_ready(world, c, n)
        elif n["Status"] == "DeepHealthCheckInProgress" and now >= n["_ready_at"]:
            _node_ready(world, c, n)
        if n["Status"] == "Running" and n["_op"] is None and n["_fault"] is None:
            f = world.faults.take(
                "deep_health_fail",
                cluster=c["ClusterName"],
                instance_group=n["InstanceGroupName"],
                instance_id=iid,
                account=account,
            )
            if f:
                _apply_health_fault(world, c, n, f, now)


def _node_ready(world: World, c: dict[str, Any], n: dict[str, Any]) -> None:
    n["Status"] = "Running"
    if n.get("_dhc_at"):
        n["_dhc"] = "Passed"
    world.touch()
    event(
        world,
        c,
        f"Node {n['InstanceId']} is running.",
        rtype="Instance",
        group=n["InstanceGroupName"],
        instance=n["InstanceId"],
    )


def _apply_health_fault(world: World, c: dict[str, Any], n: dict[str, Any], f: dict[str, Any], now: float) -> None:
    n["_fault"] = (f.get("fault_type", "GpuHealthCheckFailed"), f.get("fault_reason", "DcgmDiagnosticLevel4Failed"))
    n["_dhc"] = "Failed"
    automatic = c.get("NodeRecovery", "Automatic") == "Automatic"
    n["_health"] = "UnschedulablePendingReplacement" if automatic else "Unschedulable"
    event(
        world,
        c,
        f"Node {n['InstanceId']} failed health checks: {n['_fault'][1]}.",
        "Error",
        "Instance",
        n["InstanceGroupName"],
        n["InstanceId"],
    )
    if automatic:
        n["_op"], n["_op_due"] = "replace", world.due("hp_node_replace", 0.3)
    world.touch()


def _finish_op(
    world: World, account: str, region: str, tbl: dict[str, Any], name: str, c: dict[str, Any], now: float
) -> None:
    op = c["_op"]
    c["_op"], c["_due"] = None, None
    world.touch()
    if op == "delete":
        remove_all(world, account, region, c)
        tbl.pop(name, None)
        return
    failures = [g["_fail"] for g in c["_groups"].values() if g.get("_fail")]
    if op == "create" and (c.get("_fail") or failures):
        c["ClusterStatus"] = "Failed"
        c["FailureMessage"] = c.get("_fail") or failures[0]
        for g in c["_groups"].values():
            g["Status"] = "Failed" if g.get("_fail") or c.get("_fail") else "InService"
        remove_all(world, account, region, c)
        settings.settle(world, c, failed=c["FailureMessage"])
        event(world, c, f"Cluster {name} creation failed: {c['FailureMessage']}", "Error")
        return
    for n in c["_nodes"].values():  # anything still coming up is up once the operation completes
        if n["_op"] is None and n["Status"] in ("Pending", "DeepHealthCheckInProgress"):
            _node_ready(world, c, n)
        if n["Status"] == "SystemUpdating":
            n["Status"], n["LastSoftwareUpdateTime"] = "Running", now
    for gname, g in list(c["_groups"].items()):
        if g["Status"] == "Deleting":
            c["_groups"].pop(gname)
            for iid in [i for i, n in c["_nodes"].items() if n["InstanceGroupName"] == gname]:
                remove_node(world, account, region, c, iid)
        elif g.get("_fail"):
            g["Status"] = "Failed"
        else:
            g["Status"] = "InService"
    settings.settle(world, c)
    c["ClusterStatus"] = "InService"
    if failures:
        c["FailureMessage"] = failures[0]
        event(world, c, f"Cluster {name} update failed: {failures[0]}", "Error")
    else:
        event(world, c, f"Cluster {name} is InService.")


def kube_nodes(world: World, account: str, region: str, eks_arn: str) -> list[dict[str, Any]]:
    out = []
    report = world.kube_reports.get(f"{account}/{region}/{eks_arn.rsplit('/', 1)[-1]}") or {}
    demand = report.get("pod_ip_demand") or {}
    last = world.node_views.get(eks_arn, {})
    seen: dict[str, dict[str, Any]] = {}
    for c in table(world, account, region).values():
        if ((c.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn") != eks_arn:
            continue
        for iid, n in c["_nodes"].items():
            key = ("kube node", account, iid)
            view = world.contained.run(key, _kube_node, world, account, region, c, n, demand)
            if view is None and world.contained.failing(key):
                view = last.get(iid)  # a record the tick cannot read: the node stays as last seen
            if view is not None:
                seen[iid] = view
                out.append(view)
    world.node_views[eks_arn] = seen
    return out


def _kube_node(
    world: World, account: str, region: str, c: dict[str, Any], n: dict[str, Any], demand: dict[str, int]
) -> dict[str, Any] | None:
    """The node dict for the Kubernetes half (CONTRACT.md), None while the instance is not a node."""
    from sandbox.aws.instance_types import hardware

    if n["Status"] not in ("Running", "SystemUpdating") and n["_op"] != "reboot":
        return None
    g = c["_groups"].get(n["InstanceGroupName"], {"spec": {}})
    spec = g["spec"]
    labels = dict((spec.get("KubernetesConfig") or {}).get("Labels") or {})
    labels.update(
        {
            "node.kubernetes.io/instance-type": n["InstanceType"],
            "topology.kubernetes.io/zone": n["_zone"],
            "topology.kubernetes.io/region": region,
            "sagemaker.amazonaws.com/instance-group-name": n["InstanceGroupName"],
            "sagemaker.amazonaws.com/compute-type": "hyperpod",
            "sagemaker.amazonaws.com/cluster-name": c["ClusterName"],
            "sagemaker.amazonaws.com/node-health-status": n["_health"],
            "sagemaker.amazonaws.com/capacity-type": n["CapacityType"],
        }
    )
    if n.get("_dhc"):
        labels["sagemaker.amazonaws.com/deep-health-check-status"] = n["_dhc"]
    if n.get("_fault"):
        labels["sagemaker.amazonaws.com/fault-types"] = n["_fault"][0]
        labels["sagemaker.amazonaws.com/fault-reasons"] = n["_fault"][1]
    hw = hardware(n["InstanceType"])
    name = f"hyperpod-{n['InstanceId']}"
    addr = n.get("_addr")
    if addr:
        grow_pod_pool(world, account, region, addr, n["InstanceType"], security_groups(c, g), demand.get(name, 0))
    return {
        "name": name,
        "instance_id": n["InstanceId"],
        "instance_group": n["InstanceGroupName"],
        "instance_type": n["InstanceType"],
        "zone": n["_zone"],
        "capacity_type": n["CapacityType"],
        "labels": labels,
        "taints": [
            {"key": t["Key"], "value": t.get("Value", ""), "effect": t["Effect"]}
            for t in (spec.get("KubernetesConfig") or {}).get("Taints") or []
        ],
        "gpus": hw["gpus"],
        "efa": hw["efa"],
        "cpu": hw["cpu"],
        "memory_gib": hw["memory_gib"],
        "ready": n["_op"] != "reboot",
        "private_dns": n["PrivateDnsHostname"],
        **(kube_addresses(account, region, addr) if addr else {"ip": n["PrivatePrimaryIp"]}),
    }
