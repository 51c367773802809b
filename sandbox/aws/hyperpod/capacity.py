"""Nodes coming into being and going: where a group may launch (insufficient-capacity faults), new
nodes with their addresses from the group's subnet (sandbox/aws/addresses.py), and training-plan usage.
"""

from __future__ import annotations

import uuid
from typing import Any

from sandbox.aws.addresses import attach_node, detach, insufficient_addresses_message
from sandbox.aws.eks_clusters import capacity_failure_message, subnet_zone
from sandbox.aws.hyperpod.store import table
from sandbox.aws.world import World, new_id


def _subnets(c: dict[str, Any], g: dict[str, Any]) -> list[str]:
    spec = g["spec"]
    return list((spec.get("OverrideVpcConfig") or {}).get("Subnets") or (c.get("VpcConfig") or {}).get("Subnets") or [])


def _capacity_fault(
    world: World, account: str, region: str, c: dict[str, Any], g: dict[str, Any]
) -> tuple[list[str], str | None]:
    """Subnets a group can launch in, and the failure message when it can launch nowhere."""
    itype = g["spec"].get("InstanceType", "")
    subnets = _subnets(c, g) or [""]
    ok, bad_zone = [], None
    for s in subnets:
        zone = subnet_zone(account, region, s) if s else f"{region}a"
        f = world.faults.peek("insufficient_capacity", instance_type=itype, availability_zone=zone, account=account)
        if f:
            bad_zone = zone
        else:
            ok.append(s)
    if ok:
        return ok, None
    return [], (
        f"Instance group {g['spec']['InstanceGroupName']} failed to provision {itype} instances: "
        + capacity_failure_message(itype, bad_zone or "")
        + " (Service: AmazonEC2; Status Code: 500; Error Code: InsufficientInstanceCapacity)"
    )


def security_groups(c: dict[str, Any], g: dict[str, Any]) -> list[str]:
    spec = g["spec"]
    return list(
        (spec.get("OverrideVpcConfig") or {}).get("SecurityGroupIds")
        or (c.get("VpcConfig") or {}).get("SecurityGroupIds")
        or []
    )


def dns_hostname(ip: str, region: str) -> str:
    """EC2's private DNS name of an address (us-east-1 has the older ec2.internal domain)."""
    domain = "ec2.internal" if region == "us-east-1" else f"{region}.compute.internal"
    return f"ip-{ip.replace('.', '-')}.{domain}"


def new_node(
    world: World,
    account: str,
    region: str,
    c: dict[str, Any],
    g: dict[str, Any],
    subnet: str,
    start: float,
    ready_at: float,
    logical_id: str | None = None,
) -> dict[str, Any] | None:
    """A launched instance with its ENIs in `subnet`; None when the subnet has no room for them."""
    iid = new_id("i-", 17)
    zone = subnet_zone(account, region, subnet) if subnet else f"{region}a"
    spec = g["spec"]
    addr = None
    if subnet:
        addr = attach_node(
            world,
            account,
            region,
            subnet,
            instance_type=spec["InstanceType"],
            efa_only=(spec.get("NetworkInterface") or {}).get("InterfaceType") == "efa-only",
            groups=security_groups(c, g),
            description=f"Amazon SageMaker HyperPod {c['ClusterName']} {iid}",
        )
        if addr is None:
            return None
    octet = int(iid[-4:], 16)
    ip = addr["ip"] if addr else f"10.1.{octet // 256 % 256}.{octet % 256}"  # a group without subnets
    node = {
        "InstanceId": iid,
        "InstanceGroupName": spec["InstanceGroupName"],
        "InstanceType": spec["InstanceType"],
        "LaunchTime": start,
        "Status": "Pending",
        "Message": "",
        "NodeLogicalId": logical_id or str(uuid.uuid4()),
        "_subnet": subnet,
        "_zone": zone,
        "_addr": addr,
        "_ready_at": ready_at,
        "_dhc_at": start + (ready_at - start) * 0.6 if spec.get("OnStartDeepHealthChecks") else None,
        "_health": "Schedulable",
        "_dhc": None,
        "_fault": None,
        "_op": None,
        "_op_due": None,
        "PrivatePrimaryIp": ip,
        "PrivateDnsHostname": dns_hostname(ip, region),
        "CapacityType": "Spot" if "Spot" in (spec.get("CapacityRequirements") or {}) else "OnDemand",
    }
    c["_nodes"][iid] = node
    return node


def remove_node(world: World, account: str, region: str, c: dict[str, Any], iid: str) -> dict[str, Any] | None:
    """The instance is terminated: it leaves the cluster and its addresses go back to the subnet."""
    node = c["_nodes"].pop(iid, None)
    if node is not None:
        detach(world, account, region, node.get("_addr"))
    return node


def remove_all(world: World, account: str, region: str, c: dict[str, Any]) -> None:
    for iid in list(c["_nodes"]):
        remove_node(world, account, region, c, iid)


def launch_nodes(
    world: World, account: str, region: str, c: dict[str, Any], g: dict[str, Any], count: int, duration: float
) -> str | None:
    """Schedule `count` new nodes over `duration` seconds; returns a failure message (and launches
    none) when they cannot all launch: no capacity in any zone of the group, or too few free
    addresses in its subnets."""
    if count <= 0:
        return None
    subnets, failure = _capacity_fault(world, account, region, c, g)
    if failure:
        return failure
    now = world.now()
    launched: list[str] = []
    for i in range(count):
        ready = now + duration * (0.45 + 0.5 * (i + 1) / count)
        subnet = subnets[i % len(subnets)]
        node = new_node(world, account, region, c, g, subnet, now, ready)
        if node is not None:
            launched.append(node["InstanceId"])
        else:
            for iid in launched:  # all or nothing, as a launch request with a minimum count
                remove_node(world, account, region, c, iid)
            spec = g["spec"]
            return (
                f"Instance group {spec['InstanceGroupName']} failed to provision {spec['InstanceType']} instances: "
                + insufficient_addresses_message(subnet)
                + " (Service: AmazonEC2; Status Code: 400; Error Code: InsufficientFreeAddressesInSubnet)"
            )
    return None


def plan_usage(world: World) -> None:
    """InUse/Available instance counts of every training plan from the clusters' nodes."""
    for account, region, plans in world.tables("training_plans"):
        used: dict[str, int] = {}
        for c in table(world, account, region).values():
            for n in c["_nodes"].values():
                arn = c["_groups"].get(n["InstanceGroupName"], {"spec": {}})["spec"].get("TrainingPlanArn")
                if arn:
                    used[arn] = used.get(arn, 0) + 1
        for tp in plans.values():
            in_use = used.get(tp["TrainingPlanArn"], 0)
            if tp.get("InUseInstanceCount") != in_use:
                tp["InUseInstanceCount"] = in_use
                tp["AvailableInstanceCount"] = max(0, tp["TotalInstanceCount"] - in_use)
                world.touch()
