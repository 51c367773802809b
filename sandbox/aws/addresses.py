"""Private addresses from the subnets, as instances and the VPC CNI really take them.

An instance launched into a subnet gets an ENI there whose primary address is the node's IP: the
one HyperPod reports (PrivatePrimaryIp, PrivateDnsHostname) and the Kubernetes Node carries as
InternalIP. On an EKS node the VPC CNI (aws-node) then fills that ENI with secondary addresses, the
warm pool it hands to pods (pods with hostNetwork use the node's own address instead), and attaches
one more ENI of addresses when the pool runs out. EFA interfaces of the `efa` kind take an address
each; `efa-only` interfaces take none, which is why they exist.

Everything is a real moto ENI in the subnet, so DescribeSubnets' AvailableIpAddressCount goes down
and DescribeNetworkInterfaces lists them; they are deleted with the instance. A subnet without
enough free addresses refuses the launch with EC2's InsufficientFreeAddressesInSubnet.

Simplifications: the CNI's extra ENIs are never given back while the node lives (the real plugin
releases them after a cool-down), and prefix delegation is not modelled.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from sandbox.aws.world import World, new_id

# AWS keeps the first four and the last address of every subnet
# (network, VPC router, DNS, future use; broadcast).
_RESERVED_HEAD = 4
_DEFAULT_IPS_PER_ENI = 15
_DEFAULT_MAX_ENIS = 4


def _ec2(account: str, region: str) -> Any:
    from moto.ec2.models import ec2_backends

    return ec2_backends[account][region]


def network_facts(instance_type: str) -> dict[str, int]:
    """Addresses per ENI, ENIs and EFA interfaces of an EC2 or SageMaker (ml.*) type."""
    from moto.ec2.models.instance_types import INSTANCE_TYPES

    data = INSTANCE_TYPES.get(instance_type[3:] if instance_type.startswith("ml.") else instance_type) or {}
    net = data.get("NetworkInfo") or {}
    efa = (net.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0) if net.get("EfaSupported") else 0
    return {
        "ips_per_eni": int(net.get("Ipv4AddressesPerInterface") or _DEFAULT_IPS_PER_ENI),
        "max_enis": int(net.get("MaximumNetworkInterfaces") or _DEFAULT_MAX_ENIS),
        "efa": int(efa),
    }


def insufficient_addresses_message(subnet_id: str) -> str:
    return f"There are not enough free addresses in subnet '{subnet_id}' to satisfy the requested number of instances."


def _used(ec2: Any, subnet: Any) -> set[str]:
    used = set(getattr(subnet, "_subnet_ips", {}) or {})
    for eni in ec2.get_all_network_interfaces():
        if eni.subnet is not None and eni.subnet.id == subnet.id:
            used.update(a.get("PrivateIpAddress") for a in eni.private_ip_addresses if a.get("PrivateIpAddress"))
            if eni.private_ip_address:
                used.add(eni.private_ip_address)
    return used


def free_ips(account: str, region: str, subnet_id: str, count: int) -> list[str] | None:
    """The lowest `count` free addresses of the subnet, or None when it has fewer."""
    ec2 = _ec2(account, region)
    subnet = ec2.get_subnet(subnet_id)
    net = ipaddress.ip_network(subnet.cidr_block, strict=False)
    used = _used(ec2, subnet)
    out: list[str] = []
    last = net.num_addresses - 1  # the broadcast address
    for i in range(_RESERVED_HEAD, last):
        ip = str(net.network_address + i)
        if ip not in used:
            out.append(ip)
            if len(out) == count:
                return out
    return None if count else out


def _eni(ec2: Any, subnet_id: str, ips: list[str], groups: list[str], description: str, interface_type: str) -> str:
    subnet = ec2.get_subnet(subnet_id)
    known = {g.id for g in ec2.describe_security_groups()}
    eni = ec2.create_network_interface(
        subnet,
        ips[0],
        private_ip_addresses=[{"Primary": i == 0, "PrivateIpAddress": ip} for i, ip in enumerate(ips)],
        group_ids=[g for g in groups if g in known] or None,
        description=description,
    )
    eni.interface_type = interface_type
    eni.requester_managed = True  # made by the service, as HyperPod's and the CNI's ENIs are
    eni.status = "in-use"
    return eni.id


def attach_node(
    world: World,
    account: str,
    region: str,
    subnet_id: str,
    *,
    instance_type: str,
    efa_only: bool,
    groups: list[str],
    description: str,
) -> dict[str, Any] | None:
    """ENIs for a new instance: its primary address, the CNI's first pool of pod addresses, and an
    address per `efa` interface. None when the subnet has too few free addresses (nothing taken)."""
    facts = network_facts(instance_type)
    extra_efa = 0 if efa_only else max(facts["efa"] - 1, 0)  # the primary ENI is the first EFA
    pool = facts["ips_per_eni"] - 1
    ips = free_ips(account, region, subnet_id, 1 + pool + extra_efa)
    if ips is None:
        return None
    ec2 = _ec2(account, region)
    primary = _eni(ec2, subnet_id, ips[: 1 + pool], groups, description, "efa" if facts["efa"] else "interface")
    enis = [primary]
    for ip in ips[1 + pool :]:
        enis.append(_eni(ec2, subnet_id, [ip], groups, f"{description} (EFA)", "efa"))
    world.touch()
    return {"ip": ips[0], "pod_ips": ips[1 : 1 + pool], "enis": enis, "subnet": subnet_id}


def grow_pod_pool(
    world: World, account: str, region: str, rec: dict[str, Any], instance_type: str, groups: list[str], demand: int
) -> None:
    """What aws-node does when pods need more addresses than the node holds: attach another ENI
    full of secondary addresses, while the instance type has ENIs to spare and the subnet addresses."""
    facts = network_facts(instance_type)
    while demand > len(rec["pod_ips"]) and len(rec["enis"]) < facts["max_enis"]:
        ips = free_ips(account, region, rec["subnet"], facts["ips_per_eni"])
        if ips is None:
            return  # pods then wait with FailedCreatePodSandBox, as on a full subnet
        ec2 = _ec2(account, region)
        rec["enis"].append(_eni(ec2, rec["subnet"], ips, groups, "aws-K8S-" + rec["enis"][0], "interface"))
        rec["pod_ips"] = rec["pod_ips"] + ips[1:]
        world.touch()


def detach(world: World, account: str, region: str, rec: dict[str, Any] | None) -> None:
    """The instance is gone: its ENIs and their addresses go back to the subnet."""
    if not rec:
        return
    ec2 = _ec2(account, region)
    for eni_id in rec.get("enis") or []:
        ec2.enis.pop(eni_id, None)
    rec["enis"] = []
    world.touch()


def cidr_of(account: str, region: str, subnet_id: str) -> str:
    try:
        return str(_ec2(account, region).get_subnet(subnet_id).cidr_block)
    except Exception:  # noqa: BLE001 - a subnet deleted under a running node: nothing to report
        return ""


def nodegroup_addresses(
    world: World, account: str, region: str, ng: Any, instance_type: str, subnets: list[str], desired: int
) -> list[dict[str, Any]]:
    """Addresses of an EKS managed node group's instances (index i in subnets[i % n]), kept in the
    world's own table so that they stay the same from tick to tick and go back when it shrinks."""
    table = world.table("nodegroup_instances", account, region)
    recs: list[dict[str, Any]] = table.setdefault(ng.arn, [])
    while len(recs) > desired:
        detach(world, account, region, recs.pop())
    while len(recs) < desired:
        subnet = subnets[len(recs) % len(subnets)] if subnets else ""
        iid = new_id("i-", 17)
        rec = _attach_or_none(world, account, region, subnet, instance_type)
        if rec is None:
            break  # the node group cannot grow in a full (or missing) subnet
        rec["instance_id"] = iid
        recs.append(rec)
    return [{**r, "kube": kube_addresses(account, region, r)} for r in recs]


def _attach_or_none(world: World, account: str, region: str, subnet: str, instance_type: str) -> dict[str, Any] | None:
    try:
        _ec2(account, region).get_subnet(subnet)
    except Exception:  # noqa: BLE001 - moto raises its own InvalidSubnetID error
        return None
    return attach_node(
        world, account, region, subnet, instance_type=instance_type, efa_only=False, groups=[], description=""
    )


def release_nodegroup(world: World, account: str, region: str, arn: str) -> None:
    for rec in world.table("nodegroup_instances", account, region).pop(arn, None) or []:
        detach(world, account, region, rec)


def kube_addresses(account: str, region: str, rec: dict[str, Any]) -> dict[str, Any]:
    """The address fields of a node dict for the Kubernetes half (CONTRACT.md)."""
    return {"ip": rec["ip"], "pod_ips": list(rec["pod_ips"]), "subnet_cidr": cidr_of(account, region, rec["subnet"])}
