"""EC2 and FSx where moto's answers would tell a user something untrue: NAT gateway timing
(pending -> available) and its private address inside its subnet, Elastic IPs from documentation
ranges (moto hands out 127.x loopback addresses), FSx Lifecycle and MountName."""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from sandbox.aws.addresses import free_ips
from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import World, new_id

# Public addresses the sandbox hands out: the RFC 5737 documentation ranges, which route nowhere,
# so nothing can ever connect to an address a sandbox cluster shows.
PUBLIC_RANGES = ("198.51.100.0/24", "203.0.113.0/24", "192.0.2.0/24")


def _public_ips_in_use() -> set[str]:
    from moto.ec2.models import ec2_backends

    used = set()
    for _account, regions in list(ec2_backends.items()):
        for _region, backend in list(regions.items()):
            used.update(a.public_ip for a in backend.addresses)
    return used


def next_public_ip() -> str | None:
    """The first documentation address no Elastic IP of any account holds."""
    used = _public_ips_in_use()
    for net in PUBLIC_RANGES:
        for host in ipaddress.ip_network(net).hosts():
            if str(host) not in used:
                return str(host)
    return None


@handles("ec2", "AllocateAddress")
def allocate_address(ctx: Ctx) -> Response | None:
    if ctx.params.get("Address") or ctx.params.get("PublicIpv4Pool"):
        return None  # a specific (bring-your-own) address: moto keeps it as given
    new_ip = next_public_ip()
    if new_ip is None:
        raise AwsError("AddressLimitExceeded", "The maximum number of addresses has been reached.", 400)
    status, headers, body = ctx.moto()
    m = re.search(rb"<publicIp>([^<]+)</publicIp>", body)
    if status < 300 and m:
        from moto.ec2.models import ec2_backends

        old = m.group(1).decode()
        for eip in ec2_backends[ctx.account][ctx.region].addresses:
            if eip.public_ip == old:
                eip.public_ip = new_ip
        body = body.replace(m.group(0), f"<publicIp>{new_ip}</publicIp>".encode())
    return status, [(k, v) for k, v in headers if k.lower() != "content-length"], body


@handles("ec2", "CreateNatGateway")
def create_nat(ctx: Ctx) -> Response:
    status, headers, body = ctx.moto()
    m = re.search(rb"<natGatewayId>(nat-[0-9a-f]+)</natGatewayId>", body)
    if status < 300 and m:
        from moto.ec2.models import ec2_backends

        nat_id = m.group(1).decode()
        nat = ec2_backends[ctx.account][ctx.region].nat_gateways.get(nat_id)
        if nat is not None:
            nat.state = "pending"
            ctx.world.table("nat_gateways", ctx.account, ctx.region)[nat_id] = {"due": ctx.world.due("nat_gateway")}
            body = body.replace(b"<state>available</state>", b"<state>pending</state>")
            body = _nat_address_in_subnet(ctx, nat, body)
    return status, [(k, v) for k, v in headers if k.lower() != "content-length"], body


def _nat_address_in_subnet(ctx: Ctx, nat: Any, body: bytes) -> bytes:
    """moto gives the NAT's ENI a random 10.x address, usually outside its subnet: move it to the
    subnet's next free address, as EC2 assigns it."""
    eni = nat._eni
    old = eni.private_ip_address
    eni.private_ip_addresses = []  # so that the next free address may be its own
    ips = free_ips(ctx.account, ctx.region, nat.subnet_id, 1)
    if not ips:
        raise AwsError(
            "InsufficientFreeAddressesInSubnet",
            f"There are not enough free addresses in subnet '{nat.subnet_id}' to satisfy the requested "
            "number of instances.",
            400,
        )
    eni.private_ip_address = nat.private_ip = ips[0]
    eni.private_ip_addresses = [{"Primary": True, "PrivateIpAddress": ips[0]}]
    for address in nat.address_set:
        if address.get("privateIp") == old:
            address["privateIp"] = ips[0]
    return body.replace(f">{old}<".encode(), f">{ips[0]}<".encode())


@handles("ec2", "DeleteNatGateway")
def delete_nat(ctx: Ctx) -> Response:
    status, headers, body = ctx.moto()
    m = re.search(rb"<natGatewayId>(nat-[0-9a-f]+)</natGatewayId>", body)
    if status < 300 and m:
        from moto.ec2.models import ec2_backends

        nat_id = m.group(1).decode()
        nat = ec2_backends[ctx.account][ctx.region].nat_gateways.get(nat_id)
        if nat is not None:  # real NAT gateways linger in "deleting" for about a minute
            nat.state = "deleting"
            ctx.world.table("nat_gateways", ctx.account, ctx.region)[nat_id] = {
                "due": ctx.world.due("nat_gateway"),
                "to": "deleted",
            }
    return status, [(k, v) for k, v in headers if k.lower() != "content-length"], body


def _decorate(world: World, account: str, region: str, fs: dict[str, Any]) -> None:
    tbl = world.table("fsx", account, region)
    rec = tbl.get(fs["FileSystemId"])
    if rec is None:  # created some other way (e.g. CloudFormation): starts its clock now
        rec = tbl[fs["FileSystemId"]] = {
            "lifecycle": "CREATING",
            "due": world.due("fsx_create"),
            "mount_name": new_id("", 8, "abcdefghijklmnopqrstuvwxyz0123456789"),
        }
        world.touch()
    fs["Lifecycle"] = rec["lifecycle"]
    if fs.get("FileSystemType") == "LUSTRE":
        lc = fs.setdefault("LustreConfiguration", {})
        lc.setdefault("MountName", rec["mount_name"])
        lc.setdefault("DeploymentType", "PERSISTENT_2")
    fs.setdefault("OwnerId", account)
    fs.setdefault("VpcId", _vpc_of(account, region, (fs.get("SubnetIds") or [None])[0]))


def _vpc_of(account: str, region: str, subnet: str | None) -> str | None:
    if not subnet:
        return None
    from moto.ec2.models import ec2_backends

    try:
        return ec2_backends[account][region].get_subnet(subnet).vpc_id
    except Exception:
        return None


def _rewrite(ctx: Ctx, resp: Response, key: str) -> Response:
    status, headers, body = resp
    if status >= 300:
        return resp
    data = json.loads(body or b"{}")
    items = data.get(key)
    for fs in items if isinstance(items, list) else [items] if isinstance(items, dict) else []:
        _decorate(ctx.world, ctx.account, ctx.region, fs)
    if isinstance(data.get(key), dict):
        data[key] = {k: v for k, v in data[key].items() if v is not None}
    return ctx.ok(data, status)


@handles("fsx", "CreateFileSystem")
def create_fs(ctx: Ctx) -> Response:
    return _rewrite(ctx, ctx.moto(), "FileSystem")


@handles("fsx", "DeleteFileSystem")
def delete_fs(ctx: Ctx) -> Response:
    from moto.fsx.models import fsx_backends

    fs_id = ctx.params.get("FileSystemId", "")
    backend = fsx_backends[ctx.account][ctx.region]
    obj = backend.file_systems.get(fs_id)
    resp = ctx.moto()
    if resp[0] < 300 and obj is not None:  # keep it visible as DELETING for a while, like FSx does
        backend.file_systems[fs_id] = obj
        rec = ctx.world.table("fsx", ctx.account, ctx.region).setdefault(fs_id, {"mount_name": "deleted0"})
        rec.update({"lifecycle": "DELETING", "due": ctx.world.due("fsx_create", 0.5)})
    return resp


@handles("fsx", "DescribeFileSystems")
def describe_fs(ctx: Ctx) -> Response:
    from moto.fsx.models import fsx_backends

    known = fsx_backends[ctx.account][ctx.region].file_systems
    for fs_id in ctx.params.get("FileSystemIds") or []:
        if fs_id not in known:  # moto answers an empty list; FSx answers FileSystemNotFound
            raise AwsError("FileSystemNotFound", f"File system '{fs_id}' does not exist.", 400)
    return _rewrite(ctx, ctx.moto(), "FileSystems")


def tick_ec2(world: World) -> None:
    from moto.ec2.models import ec2_backends

    now = world.now()
    for account, region, tbl in world.tables("nat_gateways"):
        for nat_id, rec in list(tbl.items()):
            if now >= rec["due"]:
                backend = ec2_backends[account][region]
                nat = backend.nat_gateways.get(nat_id)
                if nat is not None and nat.state in ("pending", "deleting"):
                    nat.state = rec.get("to", "available")
                    if nat.state == "deleted":  # its ENI (and address) goes back to the subnet
                        backend.enis.pop(getattr(nat._eni, "id", ""), None)
                tbl.pop(nat_id)
                world.touch()
    from moto.fsx.models import fsx_backends

    for account, region, tbl in world.tables("fsx"):
        for fs_id, rec in list(tbl.items()):
            if rec["lifecycle"] in ("CREATING", "DELETING") and now >= rec["due"]:
                world.touch()
                if rec["lifecycle"] == "CREATING":
                    rec["lifecycle"] = "AVAILABLE"
                else:
                    fsx_backends[account][region].file_systems.pop(fs_id, None)
                    tbl.pop(fs_id)
