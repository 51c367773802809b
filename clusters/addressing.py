"""Address planning for a cluster's VPC. Users never type a CIDR; this is the one allocator.

Layout of the /16: the first /20 holds the small public and private subnets of the two zones the
EKS control plane needs (four /22); compute subnets for accelerator fleets are /20s taken from
the free space after it, one per zone.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

COMPUTE_PREFIX = 20
BASE_PREFIX = 22


class AddressSpaceExhausted(Exception):
    """The VPC has no free block of the requested size."""


def base_subnets(vpc_cidr: str) -> dict[str, str]:
    """The four /22 subnets of the control-plane zones: public-a, public-b, private-a, private-b."""
    vpc = ipaddress.ip_network(vpc_cidr)
    blocks = list(vpc.subnets(new_prefix=BASE_PREFIX))[:4]
    return dict(zip(["public-0", "public-1", "private-0", "private-1"], map(str, blocks), strict=True))


def allocate_subnet(vpc_cidr: str, taken: Iterable[str], prefix: int = COMPUTE_PREFIX) -> str:
    """The first block of size ``prefix`` in the VPC that overlaps nothing already taken."""
    vpc = ipaddress.ip_network(vpc_cidr)
    used = [ipaddress.ip_network(cidr) for cidr in taken]
    for candidate in vpc.subnets(new_prefix=prefix):
        if not any(candidate.overlaps(block) for block in used):
            return str(candidate)
    raise AddressSpaceExhausted(
        f"No free /{prefix} is left in {vpc_cidr}: remove an unused instance group's subnet or use another cluster."
    )
