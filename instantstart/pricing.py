"""Estimated on-demand prices of HyperPod instance types, in USD per instance-hour.

The shipped table is an estimate from public SageMaker HyperPod list prices (us-east-1) and is
labelled as such wherever it is shown: real bills depend on region, training plans, spot and
discounts. A team may override entries (``overrides``: instance type -> USD per hour); types the
table does not know have no estimate (``None``) rather than a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

PRICE_SOURCE = "estimate from public SageMaker HyperPod on-demand list prices (us-east-1)"

PRICES: dict[str, Decimal] = {
    name: Decimal(value)
    for name, value in {
        "ml.p4d.24xlarge": "37.69",
        "ml.p4de.24xlarge": "47.11",
        "ml.p5.48xlarge": "63.30",
        "ml.p5e.48xlarge": "72.00",
        "ml.p5en.48xlarge": "75.00",
        "ml.p6-b200.48xlarge": "113.93",
        "ml.trn1.32xlarge": "24.72",
        "ml.trn2.48xlarge": "46.00",
        "ml.g5.xlarge": "1.41",
        "ml.g5.2xlarge": "1.52",
        "ml.g5.4xlarge": "2.03",
        "ml.g5.8xlarge": "3.06",
        "ml.g5.12xlarge": "7.09",
        "ml.g5.24xlarge": "10.18",
        "ml.g5.48xlarge": "20.36",
        "ml.g6.xlarge": "1.01",
        "ml.g6.12xlarge": "5.75",
        "ml.g6.48xlarge": "16.29",
        "ml.g6e.xlarge": "2.34",
        "ml.g6e.12xlarge": "13.12",
        "ml.g6e.48xlarge": "37.59",
        "ml.m5.xlarge": "0.23",
        "ml.m5.2xlarge": "0.46",
        "ml.m5.4xlarge": "0.92",
        "ml.m5.12xlarge": "2.76",
        "ml.c5.xlarge": "0.20",
        "ml.c5.4xlarge": "0.82",
        "ml.t3.medium": "0.05",
        "ml.t3.large": "0.10",
    }.items()
}


def hourly_price(instance_type: str, overrides: Mapping[str, Decimal] | None = None) -> Decimal | None:
    """USD per hour for one instance of ``instance_type`` (a team override first), or None if unknown."""
    if overrides and instance_type in overrides:
        return Decimal(overrides[instance_type])
    return PRICES.get(instance_type)


def hourly_cost(
    instances: Mapping[str, int], overrides: Mapping[str, Decimal] | None = None
) -> tuple[Decimal, list[str]]:
    """(USD per hour of ``{instance type: count}``, the types without a price, which count as 0)."""
    total = Decimal(0)
    unknown: list[str] = []
    for instance_type, count in instances.items():
        price = hourly_price(instance_type, overrides)
        if price is None:
            if count:
                unknown.append(instance_type)
            continue
        total += price * count
    return total, sorted(unknown)
