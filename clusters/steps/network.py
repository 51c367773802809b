"""Phase `network`: the VPC and everything in it. Users never choose a CIDR."""

from __future__ import annotations

from django.db import transaction

from instantstart.operations.context import StepContext
from instantstart.operations.results import Done, Wait

from ..addressing import allocate_subnet, base_subnets
from ..models import Cluster, ComputeSubnet
from .base import client_token, cloud_of, cluster_of, ensure, owned_filter, owned_nat_gateways, tag_specs

NAT_POLL_SECONDS = 15


def _first(items: list[dict], key: str):
    return items[0][key] if items else None


def control_plane_zones(ec2, cluster: Cluster) -> list[str]:
    """The cluster's zone plus one more: EKS needs subnets in two zones."""
    zones = sorted(
        z["ZoneName"]
        for z in ec2.describe_availability_zones(Filters=[{"Name": "zone-type", "Values": ["availability-zone"]}])[
            "AvailabilityZones"
        ]
    )
    other = next(z for z in zones if z != cluster.availability_zone)
    return [cluster.availability_zone, other]


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    ec2 = cloud_of(cluster).client("ec2")
    prefix = cluster.resource_prefix

    vpc_id = ensure(
        ctx,
        "vpc_id",
        lambda: _first(ec2.describe_vpcs(Filters=owned_filter(cluster, f"{prefix}-vpc"))["Vpcs"], "VpcId"),
        lambda: ec2.create_vpc(
            CidrBlock=cluster.vpc_cidr, TagSpecifications=tag_specs(cluster, "vpc", f"{prefix}-vpc")
        )["Vpc"]["VpcId"],
    )
    if not ctx.phase.state.get("vpc_dns"):
        ec2.modify_vpc_attribute(VpcId=vpc_id, EnableDnsSupport={"Value": True})
        ec2.modify_vpc_attribute(VpcId=vpc_id, EnableDnsHostnames={"Value": True})
        ctx.record(vpc_dns=True)

    zones = ctx.phase.state.get("zones") or control_plane_zones(ec2, cluster)
    ctx.record(zones=zones)
    subnets: dict[str, str] = {}
    for role, cidr in base_subnets(cluster.vpc_cidr).items():
        kind, index = role.split("-")
        name = f"{prefix}-{role}"
        subnets[role] = ensure(
            ctx,
            f"subnet_{role}",
            lambda name=name: _first(ec2.describe_subnets(Filters=owned_filter(cluster, name))["Subnets"], "SubnetId"),
            lambda name=name, cidr=cidr, index=index: ec2.create_subnet(
                VpcId=vpc_id,
                CidrBlock=cidr,
                AvailabilityZone=zones[int(index)],
                TagSpecifications=tag_specs(cluster, "subnet", name),
            )["Subnet"]["SubnetId"],
        )

    igw_id = ensure(
        ctx,
        "internet_gateway_id",
        lambda: _first(
            ec2.describe_internet_gateways(Filters=owned_filter(cluster))["InternetGateways"], "InternetGatewayId"
        ),
        lambda: ec2.create_internet_gateway(TagSpecifications=tag_specs(cluster, "internet-gateway", f"{prefix}-igw"))[
            "InternetGateway"
        ]["InternetGatewayId"],
    )
    if not ctx.phase.state.get("igw_attached"):
        attached = ec2.describe_internet_gateways(InternetGatewayIds=[igw_id])["InternetGateways"][0].get(
            "Attachments", []
        )
        if not any(a.get("VpcId") == vpc_id for a in attached):
            ec2.attach_internet_gateway(InternetGatewayId=igw_id, VpcId=vpc_id)
        ctx.record(igw_attached=True)

    allocation_id = ensure(
        ctx,
        "nat_eip_allocation_id",
        lambda: _first(ec2.describe_addresses(Filters=owned_filter(cluster))["Addresses"], "AllocationId"),
        lambda: ec2.allocate_address(Domain="vpc", TagSpecifications=tag_specs(cluster, "elastic-ip", f"{prefix}-nat"))[
            "AllocationId"
        ],
    )
    nat_id = ensure(
        ctx,
        "nat_gateway_id",
        lambda: _first(
            [n for n in owned_nat_gateways(ec2, cluster, [vpc_id]) if n["State"] not in ("deleting", "failed")],
            "NatGatewayId",
        ),
        lambda: ec2.create_nat_gateway(
            SubnetId=subnets["public-0"],
            AllocationId=allocation_id,
            ClientToken=client_token(cluster, "nat"),
            TagSpecifications=tag_specs(cluster, "natgateway", f"{prefix}-nat"),
        )["NatGateway"]["NatGatewayId"],
    )

    public_rt = ensure(
        ctx,
        "public_route_table_id",
        lambda: _first(
            ec2.describe_route_tables(Filters=owned_filter(cluster, f"{prefix}-public"))["RouteTables"], "RouteTableId"
        ),
        lambda: ec2.create_route_table(
            VpcId=vpc_id, TagSpecifications=tag_specs(cluster, "route-table", f"{prefix}-public")
        )["RouteTable"]["RouteTableId"],
    )
    if not ctx.phase.state.get("public_routes"):
        _ensure_default_route(ec2, public_rt, GatewayId=igw_id)
        for role in ("public-0", "public-1"):
            _ensure_association(ec2, public_rt, subnets[role])
        for role in ("public-0", "public-1"):
            ec2.modify_subnet_attribute(SubnetId=subnets[role], MapPublicIpOnLaunch={"Value": True})
        ctx.record(public_routes=True)

    security_group_id = ensure(
        ctx,
        "security_group_id",
        lambda: _first(
            ec2.describe_security_groups(
                Filters=owned_filter(cluster) + [{"Name": "group-name", "Values": [f"{prefix}-nodes"]}]
            )["SecurityGroups"],
            "GroupId",
        ),
        lambda: ec2.create_security_group(
            GroupName=f"{prefix}-nodes",
            VpcId=vpc_id,
            Description="InstantStart cluster nodes: all traffic within the group (EFA needs it)",
            TagSpecifications=tag_specs(cluster, "security-group", f"{prefix}-nodes"),
        )["GroupId"],
    )
    if not ctx.phase.state.get("security_group_rules"):
        _ensure_self_referencing_rules(ec2, security_group_id)
        ctx.record(security_group_rules=True)

    nat = ec2.describe_nat_gateways(NatGatewayIds=[nat_id])["NatGateways"][0]
    if nat["State"] == "failed":
        from instantstart.operations.results import Fail

        return Fail(
            f"NAT gateway {nat_id} failed: {nat.get('FailureMessage', 'no reason given')}",
            hint="Retry the operation; a new NAT gateway will be created.",
            code="NatGatewayFailed",
        )
    if nat["State"] != "available":
        return Wait(NAT_POLL_SECONDS, f"NAT gateway {nat_id} is {nat['State']}")

    private_rt = ensure(
        ctx,
        "private_route_table_id",
        lambda: _first(
            ec2.describe_route_tables(Filters=owned_filter(cluster, f"{prefix}-private"))["RouteTables"], "RouteTableId"
        ),
        lambda: ec2.create_route_table(
            VpcId=vpc_id, TagSpecifications=tag_specs(cluster, "route-table", f"{prefix}-private")
        )["RouteTable"]["RouteTableId"],
    )
    if not ctx.phase.state.get("private_routes"):
        _ensure_default_route(ec2, private_rt, NatGatewayId=nat_id)
        for role in ("private-0", "private-1"):
            _ensure_association(ec2, private_rt, subnets[role])
        ctx.record(private_routes=True)

    ensure(
        ctx,
        "s3_endpoint_id",
        lambda: _first(
            [
                e
                for e in ec2.describe_vpc_endpoints(
                    Filters=[
                        {"Name": "vpc-id", "Values": [vpc_id]},
                        {"Name": "service-name", "Values": [f"com.amazonaws.{cluster.region}.s3"]},
                    ]
                )["VpcEndpoints"]
                if e.get("State", "").lower() not in ("deleted", "deleting")
            ],
            "VpcEndpointId",
        ),
        lambda: ec2.create_vpc_endpoint(
            VpcId=vpc_id,
            VpcEndpointType="Gateway",
            ServiceName=f"com.amazonaws.{cluster.region}.s3",
            RouteTableIds=[private_rt, public_rt],
            ClientToken=client_token(cluster, "s3ep"),
            TagSpecifications=tag_specs(cluster, "vpc-endpoint", f"{prefix}-s3"),
        )["VpcEndpoint"]["VpcEndpointId"],
    )

    Cluster.objects.filter(pk=cluster.pk).update(
        vpc_id=vpc_id,
        network={
            "vpc_id": vpc_id,
            "vpc_cidr": cluster.vpc_cidr,
            "zones": zones,
            "subnets": subnets,
            "internet_gateway_id": igw_id,
            "nat_gateway_id": nat_id,
            "security_group_id": security_group_id,
            "public_route_table_id": public_rt,
            "private_route_table_id": private_rt,
            "s3_endpoint_id": ctx.phase.state["s3_endpoint_id"],
        },
    )
    cluster.refresh_from_db()
    zones_needed = sorted(set(cluster.instance_groups.values_list("availability_zone", flat=True)))
    for zone in zones_needed:
        ensure_compute_subnet(cluster, zone)
    return Done(f"VPC {vpc_id} with compute subnets in {', '.join(zones_needed)}")


def _ensure_default_route(ec2, route_table_id: str, **target) -> None:
    table = ec2.describe_route_tables(RouteTableIds=[route_table_id])["RouteTables"][0]
    if any(r.get("DestinationCidrBlock") == "0.0.0.0/0" for r in table.get("Routes", [])):
        return
    ec2.create_route(RouteTableId=route_table_id, DestinationCidrBlock="0.0.0.0/0", **target)


def _ensure_association(ec2, route_table_id: str, subnet_id: str) -> None:
    table = ec2.describe_route_tables(RouteTableIds=[route_table_id])["RouteTables"][0]
    if any(a.get("SubnetId") == subnet_id for a in table.get("Associations", [])):
        return
    ec2.associate_route_table(RouteTableId=route_table_id, SubnetId=subnet_id)


def _ensure_self_referencing_rules(ec2, group_id: str) -> None:
    group = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]
    rule = {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group_id}]}

    def has_self(permissions: list[dict]) -> bool:
        return any(
            p.get("IpProtocol") == "-1" and any(g.get("GroupId") == group_id for g in p.get("UserIdGroupPairs", []))
            for p in permissions
        )

    if not has_self(group.get("IpPermissions", [])):
        ec2.authorize_security_group_ingress(GroupId=group_id, IpPermissions=[rule])
    if not has_self(group.get("IpPermissionsEgress", [])):
        ec2.authorize_security_group_egress(GroupId=group_id, IpPermissions=[rule])


def ensure_compute_subnet(cluster: Cluster, zone: str) -> ComputeSubnet:
    """The cluster's /20 compute subnet in ``zone``: found, or allocated from the VPC's free space.

    The one place compute subnets come from (cluster create, a zone change, new instance groups).
    """
    existing = ComputeSubnet.objects.filter(cluster=cluster, availability_zone=zone).first()
    if existing and existing.subnet_id:
        return existing
    ec2 = cloud_of(cluster).client("ec2")
    name = f"{cluster.resource_prefix}-compute-{zone}"
    found = ec2.describe_subnets(Filters=owned_filter(cluster, name))["Subnets"]
    if found:
        subnet_id, cidr = found[0]["SubnetId"], found[0]["CidrBlock"]
    else:
        taken = [
            s["CidrBlock"]
            for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [cluster.vpc_id]}])["Subnets"]
        ]
        cidr = existing.cidr if existing else allocate_subnet(cluster.vpc_cidr, taken)
        with transaction.atomic():
            existing, _ = ComputeSubnet.objects.update_or_create(
                cluster=cluster, availability_zone=zone, defaults={"cidr": cidr}
            )
        subnet_id = ec2.create_subnet(
            VpcId=cluster.vpc_id,
            CidrBlock=cidr,
            AvailabilityZone=zone,
            TagSpecifications=tag_specs(cluster, "subnet", name),
        )["Subnet"]["SubnetId"]
    private_rt = cluster.network.get("private_route_table_id")
    if private_rt:
        _ensure_association(ec2, private_rt, subnet_id)
    subnet, _ = ComputeSubnet.objects.update_or_create(
        cluster=cluster, availability_zone=zone, defaults={"cidr": cidr, "subnet_id": subnet_id}
    )
    cluster.instance_groups.filter(availability_zone=zone).update(subnet_id=subnet_id)
    return subnet
