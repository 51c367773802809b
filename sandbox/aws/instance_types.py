"""Hardware facts for instance types, from moto's copy of the real EC2 DescribeInstanceTypes data."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=512)
def hardware(instance_type: str) -> dict[str, int]:
    """gpus / efa / cpu / memory_gib for an EC2 or SageMaker (ml.*) instance type."""
    from moto.ec2.models.instance_types import INSTANCE_TYPES

    ec2_type = instance_type[3:] if instance_type.startswith("ml.") else instance_type
    data: dict[str, Any] = INSTANCE_TYPES.get(ec2_type) or {}
    gpus = sum(g.get("Count", 0) for g in (data.get("GpuInfo") or {}).get("Gpus", []))
    net = data.get("NetworkInfo") or {}
    efa = (net.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0) if net.get("EfaSupported") else 0
    cpu = (data.get("VCpuInfo") or {}).get("DefaultVCpus", 4)
    mem = (data.get("MemoryInfo") or {}).get("SizeInMiB", 16384) // 1024
    return {"gpus": int(gpus), "efa": int(efa), "cpu": int(cpu), "memory_gib": int(mem)}


def known(instance_type: str) -> bool:
    from moto.ec2.models.instance_types import INSTANCE_TYPES

    return (instance_type[3:] if instance_type.startswith("ml.") else instance_type) in INSTANCE_TYPES
