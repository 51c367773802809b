"""Service Quotas values for the EC2 and SageMaker quotas ML instance types need (moto knows only vpc)."""

from __future__ import annotations

from typing import Any

from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response

# (service code, quota code, name, value, unit). Codes for EC2 are the real ones; SageMaker codes are
# stable made-up L- codes (the product looks them up by name through ListServiceQuotas).
_EC2 = [
    ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", 1152.0),
    ("L-417A185B", "Running On-Demand P instances", 768.0),
    ("L-DB2E81BA", "Running On-Demand G and VT instances", 768.0),
    ("L-2C3B7624", "Running On-Demand Trn instances", 512.0),
    ("L-1945791B", "Running On-Demand Inf instances", 256.0),
    ("L-7212CCBC", "All P4, P3 and P2 Spot Instance Requests", 384.0),
    ("L-C4BD4855", "All P5 Spot Instance Requests", 384.0),
    ("L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests", 1152.0),
    ("L-3819A6DF", "All G and VT Spot Instance Requests", 384.0),
]
_SM_TYPES = [
    "ml.p4d.24xlarge",
    "ml.p4de.24xlarge",
    "ml.p5.48xlarge",
    "ml.p5e.48xlarge",
    "ml.p5en.48xlarge",
    "ml.p6-b200.48xlarge",
    "ml.trn1.32xlarge",
    "ml.trn2.48xlarge",
    "ml.g5.xlarge",
    "ml.g5.2xlarge",
    "ml.g5.4xlarge",
    "ml.g5.8xlarge",
    "ml.g5.12xlarge",
    "ml.g5.24xlarge",
    "ml.g5.48xlarge",
    "ml.g6.xlarge",
    "ml.g6.12xlarge",
    "ml.g6.48xlarge",
    "ml.g6e.xlarge",
    "ml.g6e.12xlarge",
    "ml.g6e.48xlarge",
    "ml.m5.xlarge",
    "ml.m5.2xlarge",
    "ml.m5.4xlarge",
    "ml.m5.12xlarge",
    "ml.c5.xlarge",
    "ml.c5.4xlarge",
    "ml.t3.medium",
    "ml.t3.large",
]


def _sm_quotas() -> list[tuple[str, str, float]]:
    out: list[tuple[str, str, float]] = []
    for i, t in enumerate(_SM_TYPES):
        big = t.startswith(("ml.p", "ml.trn"))
        out.append((f"L-{0x5A0000 + 2 * i:06X}00", f"{t} for cluster usage", 4.0 if big else 16.0))
        out.append((f"L-{0x5A0000 + 2 * i + 1:06X}00", f"{t} for training job usage", 2.0 if big else 8.0))
    out.append(("L-3A7B5C1D", "Maximum number of instances per cluster", 100.0))
    out.append(("L-3A7B5C1E", "Total number of instances allowed across SageMaker HyperPod clusters", 100.0))
    out.append(("L-3A7B5C1F", "Maximum size of EBS volume in GB for a SageMaker HyperPod cluster instance", 16384.0))
    return out


_CATALOG: dict[str, tuple[str, list[tuple[str, str, float]]]] = {
    "ec2": ("Amazon Elastic Compute Cloud (Amazon EC2)", _EC2),
    "sagemaker": ("Amazon SageMaker", _sm_quotas()),
    "eks": (
        "Amazon Elastic Kubernetes Service (Amazon EKS)",
        [
            ("L-1194D53C", "Clusters", 100.0),
            ("L-6D54EA21", "Managed node groups per cluster", 30.0),
            ("L-BD136A63", "Nodes per managed node group", 450.0),
        ],
    ),
    "fsx": ("Amazon FSx", [("L-1F2B2B2D", "Lustre Persistent_2 storage capacity per file system", 100800.0)]),
}


def _vpc() -> list[tuple[str, str, float]]:
    from moto.servicequotas.resources.default_quotas.vpc import VPC_DEFAULT_QUOTAS

    return [(q["QuotaCode"], q["QuotaName"], float(q["Value"])) for q in VPC_DEFAULT_QUOTAS]


_CATALOG["vpc"] = ("Amazon Virtual Private Cloud (Amazon VPC)", _vpc())


def _quota(ctx: Ctx, service: str, code: str, name: str, value: float) -> dict[str, Any]:
    overrides = ctx.world.table("quota_overrides", ctx.account, ctx.region)
    value = overrides.get(f"{service}/{code}", value)
    unit = "None"
    return {
        "ServiceCode": service,
        "ServiceName": _CATALOG[service][0],
        "QuotaArn": f"arn:aws:servicequotas:{ctx.region}:{ctx.account}:{service}/{code}",
        "QuotaCode": code,
        "QuotaName": name,
        "Value": value,
        "Unit": unit,
        "Adjustable": True,
        "GlobalQuota": False,
        "QuotaAppliedAtLevel": "ACCOUNT",
    }


@handles("servicequotas", "GetServiceQuota", "GetAWSDefaultServiceQuota")
def get_quota(ctx: Ctx) -> Response | None:
    service, code = ctx.params.get("ServiceCode"), ctx.params.get("QuotaCode")
    if service not in _CATALOG:
        return None  # moto knows vpc
    for c, name, value in _CATALOG[service][1]:
        if c == code:
            return ctx.ok({"Quota": _quota(ctx, service, c, name, value)})
    raise AwsError(
        "NoSuchResourceException", f"The request failed because the specified quota {code} doesn't exist.", 400
    )


@handles("servicequotas", "ListServiceQuotas", "ListAWSDefaultServiceQuotas")
def list_quotas(ctx: Ctx) -> Response | None:
    service = ctx.params.get("ServiceCode")
    if service not in _CATALOG:
        return None
    items = [
        _quota(ctx, service, c, n, v)
        for c, n, v in _CATALOG[service][1]
        if not ctx.params.get("QuotaCode") or c == ctx.params["QuotaCode"]
    ]
    start = int(ctx.params.get("NextToken") or 0)
    size = int(ctx.params.get("MaxResults") or 100)
    page = items[start : start + size]
    out: dict[str, Any] = {"Quotas": page}
    if start + size < len(items):
        out["NextToken"] = str(start + size)
    return ctx.ok(out)


def quota_value(world: Any, account: str, region: str, service: str, name: str) -> float | None:
    """The applied value of the quota with this name (the account's override, else the default);
    None when the sandbox lists no such quota."""
    for code, quota_name, value in _CATALOG.get(service, ("", []))[1]:
        if quota_name == name:
            return float(world.table("quota_overrides", account, region).get(f"{service}/{code}", value))
    return None


def set_quota(world: Any, account: str, region: str, service: str, code: str, value: float) -> None:
    """Test hook (control API): change a quota's value for one account."""
    world.table("quota_overrides", account, region)[f"{service}/{code}"] = float(value)
