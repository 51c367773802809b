"""Check-before-create reads: zones, accelerator instance types and training plans of a region.

Read-only, over the team's own account (no operation, nothing created).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from botocore.exceptions import BotoCoreError, ClientError
from django.core.cache import cache

from instantstart.cloud.aws import TeamCloud, team_cloud
from instantstart.errors import cloud_read
from instantstart.tenancy.models import Team

# The EKS versions a cluster may be created with (the ones EKS has in standard or extended support,
# as the sandbox serves them), oldest first; the default is the newest. The one list: the model's
# default, the create serializer's choices and the portal form all read it from here.
KUBERNETES_VERSIONS = ("1.30", "1.31", "1.32", "1.33")
DEFAULT_KUBERNETES_VERSION = KUBERNETES_VERSIONS[-1]

# Accelerator families HyperPod offers for training and inference fleets.
ACCELERATOR_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "g5", "g6", "g6e", "trn1", "trn1n", "trn2")


def ml_name(ec2_type: str) -> str:
    return f"ml.{ec2_type}"


def ec2_name(instance_type: str) -> str:
    return instance_type.removeprefix("ml.")


def is_accelerator(ec2_type: str) -> bool:
    return ec2_type.split(".")[0] in ACCELERATOR_FAMILIES


@dataclass(frozen=True)
class InstanceTypeInfo:
    instance_type: str
    gpu_model: str | None
    gpu_count: int
    gpu_memory_gib: float
    efa_supported: bool
    efa_only_allowed: bool
    max_efa_interfaces: int
    vcpus: int
    memory_gib: float
    zones: tuple[str, ...]

    def as_dict(self) -> dict:
        data = asdict(self)
        data["zones"] = list(self.zones)
        return data


@cloud_read()
def availability_zones(team: Team, region: str) -> list[dict]:
    """The region's availability zones (Local and Wavelength zones left out), by name."""
    zones = (
        team_cloud(team, region)
        .client("ec2", region)
        .describe_availability_zones(Filters=[{"Name": "zone-type", "Values": ["availability-zone"]}])[
            "AvailabilityZones"
        ]
    )
    return [
        {"name": zone["ZoneName"], "zone_id": zone.get("ZoneId", ""), "state": zone.get("State", "available")}
        for zone in sorted(zones, key=lambda z: z["ZoneName"])
    ]


def _offerings(cloud: TeamCloud, region: str, zone: str | None) -> dict[str, set[str]]:
    ec2 = cloud.client("ec2", region)
    kwargs: dict = {"LocationType": "availability-zone"}
    if zone:
        kwargs["Filters"] = [{"Name": "location", "Values": [zone]}]
    zones_by_type: dict[str, set[str]] = {}
    for page in ec2.get_paginator("describe_instance_type_offerings").paginate(**kwargs):
        for offering in page["InstanceTypeOfferings"]:
            if is_accelerator(offering["InstanceType"]):
                zones_by_type.setdefault(offering["InstanceType"], set()).add(offering["Location"])
    return zones_by_type


def _describe(info: dict, zones: set[str]) -> InstanceTypeInfo:
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    neuron = (info.get("NeuronInfo") or {}).get("NeuronDevices") or []
    network = info.get("NetworkInfo") or {}
    efa = bool(network.get("EfaSupported"))
    max_efa = int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces") or 0)
    gpu_count = sum(g.get("Count", 0) for g in gpus) or sum(n.get("Count", 0) for n in neuron)
    # Trainium and Inferentia report their memory as Neuron (or inference) memory, not GPU memory.
    gpu_memory = (
        (info.get("GpuInfo") or {}).get("TotalGpuMemoryInMiB")
        or (info.get("NeuronInfo") or {}).get("TotalNeuronDeviceMemoryInMiB")
        or sum(n.get("Count", 0) * (n.get("MemoryInfo") or {}).get("SizeInMiB", 0) for n in neuron)
        or (info.get("InferenceAcceleratorInfo") or {}).get("TotalInferenceMemoryInMiB")
        or 0
    )
    model = gpus[0].get("Name") if gpus else (neuron[0].get("Name") if neuron else None)
    return InstanceTypeInfo(
        instance_type=ml_name(info["InstanceType"]),
        gpu_model=model,
        gpu_count=gpu_count,
        gpu_memory_gib=round(gpu_memory / 1024, 1),
        efa_supported=efa,
        # EFA-only interfaces need more than one network card (p4d, p5, g6e.48xlarge, …).
        efa_only_allowed=efa and int(network.get("MaximumNetworkCards") or 1) > 1,
        max_efa_interfaces=max_efa,
        vcpus=int((info.get("VCpuInfo") or {}).get("DefaultVCpus") or 0),
        memory_gib=round(((info.get("MemoryInfo") or {}).get("SizeInMiB") or 0) / 1024, 1),
        zones=tuple(sorted(zones)),
    )


@cloud_read()
def instance_types(team: Team, region: str, zone: str | None = None) -> list[InstanceTypeInfo]:
    """Accelerator instance types offered in the region (or zone), with what a user chooses by."""
    cloud = team_cloud(team, region)
    zones_by_type = _offerings(cloud, region, zone)
    if not zones_by_type:
        return []
    ec2 = cloud.client("ec2", region)
    names = sorted(zones_by_type)
    result: list[InstanceTypeInfo] = []
    for start in range(0, len(names), 100):
        described = ec2.describe_instance_types(InstanceTypes=names[start : start + 100])["InstanceTypes"]
        result.extend(_describe(info, zones_by_type[info["InstanceType"]]) for info in described)
    return sorted(result, key=lambda t: (t.gpu_model or "", *type_order(t.instance_type)))


_SIZES = {"nano": 0.0625, "micro": 0.125, "small": 0.25, "medium": 0.5, "large": 0.75, "xlarge": 1.0, "metal": 1000.0}


def type_order(instance_type: str) -> tuple[str, float]:
    """(family, size) so that g5.xlarge < g5.2xlarge < g5.12xlarge (not the strings' order)."""
    parts = instance_type.removeprefix("ml.").split(".")
    family, size = parts[0], parts[-1] if len(parts) > 1 else ""
    if size in _SIZES:
        return family, _SIZES[size]
    digits = size.removesuffix("xlarge")
    return family, float(digits) if digits.isdigit() else 999.0


@cloud_read()
def instance_type_info(team: Team, region: str, instance_type: str) -> InstanceTypeInfo | None:
    """One type's facts and the zones of the region offering it (None when the region has none)."""
    ec2_type = ec2_name(instance_type)
    ec2 = team_cloud(team, region).client("ec2", region)
    try:
        described = ec2.describe_instance_types(InstanceTypes=[ec2_type])["InstanceTypes"]
    except ec2.exceptions.ClientError as exc:
        if "InvalidInstanceType" in str(exc):
            return None
        raise
    if not described:
        return None
    zones: set[str] = set()
    paginator = ec2.get_paginator("describe_instance_type_offerings")
    for page in paginator.paginate(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [ec2_type]}]
    ):
        zones.update(o["Location"] for o in page["InstanceTypeOfferings"])
    return _describe(described[0], zones)


# How long the regions' accelerator offerings of a team are reused (the create form reads them all).
REGION_OFFERINGS_CACHE_SECONDS = 300


def _offers_accelerators(cloud: TeamCloud, region: str) -> bool | None:
    """Whether the account is offered any accelerator type in the region (one paginated read of the
    region's offerings, stopping at the first accelerator); None when the region cannot be read
    (an opt-in region not enabled for the account, an outage): then nothing is claimed about it."""
    ec2 = cloud.client("ec2", region)
    try:
        pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="region", PaginationConfig={"PageSize": 1000}
        )
        return any(is_accelerator(o["InstanceType"]) for page in pages for o in page["InstanceTypeOfferings"])
    except (ClientError, BotoCoreError):
        return None


@cloud_read()
def accelerator_regions(team: Team, regions: list[str], *, read: bool = True) -> dict[str, bool | None] | None:
    """{region: offers accelerator types?} for the team's account, one offerings read per region,
    cached per team (and its cloud settings) for REGION_OFFERINGS_CACHE_SECONDS. With read=False
    only what is cached (None when nothing is): a page renders at once and asks for the rest later."""
    settings_and_regions = hashlib.sha256(f"{team.cloud}:{team.aws_role_arn}:{','.join(regions)}".encode())
    key = f"catalog:accelerator-regions:{team.pk}:{settings_and_regions.hexdigest()[:16]}"
    found = cache.get(key)
    if found is None and read:
        cloud = team_cloud(team)
        with ThreadPoolExecutor(max_workers=8) as pool:
            found = dict(
                zip(regions, pool.map(lambda region: _offers_accelerators(cloud, region), regions), strict=True)
            )
        cache.set(key, found, REGION_OFFERINGS_CACHE_SECONDS)
    return found


@cloud_read()
def training_plans(team: Team, region: str) -> list[dict]:
    """The team's training plans in the region, with the zones and capacity they reserve."""
    sagemaker = team_cloud(team, region).client("sagemaker", region)
    plans = []
    kwargs: dict = {}
    while True:
        page = sagemaker.list_training_plans(**kwargs)
        for plan in page.get("TrainingPlanSummaries", []):
            zones = sorted(
                {
                    r.get("AvailabilityZone")
                    for r in plan.get("ReservedCapacitySummaries", [])
                    if r.get("AvailabilityZone")
                }
            )
            types = sorted(
                {r.get("InstanceType") for r in plan.get("ReservedCapacitySummaries", []) if r.get("InstanceType")}
            )
            plans.append(
                {
                    "arn": plan["TrainingPlanArn"],
                    "name": plan.get("TrainingPlanName", ""),
                    "status": plan.get("Status", ""),
                    "instance_types": types,
                    "zones": zones,
                    "total_instances": plan.get("TotalInstanceCount", 0),
                    "available_instances": plan.get("AvailableInstanceCount", 0),
                    "in_use_instances": plan.get("InUseInstanceCount", 0),
                    "start_time": plan.get("StartTime"),
                    "end_time": plan.get("EndTime"),
                    "target_resources": plan.get("TargetResources", []),
                }
            )
        if not page.get("NextToken"):
            return plans
        kwargs["NextToken"] = page["NextToken"]


@cloud_read()
def accelerators(team: Team, region: str, instance_types: list[str]) -> dict[str, tuple[str | None, int]]:
    """{ml type: (accelerator model, accelerators per instance)} for the given types, in one call."""
    if not instance_types:
        return {}
    ec2 = team_cloud(team, region).client("ec2", region)
    names = sorted({ec2_name(t) for t in instance_types})
    found: dict[str, tuple[str | None, int]] = {}
    for start in range(0, len(names), 100):
        for info in ec2.describe_instance_types(InstanceTypes=names[start : start + 100])["InstanceTypes"]:
            described = _describe(info, set())
            found[described.instance_type] = (described.gpu_model, described.gpu_count)
    return found
