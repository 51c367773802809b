"""SageMaker training plans (moto has none) and tags on the SageMaker resources the sandbox owns."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import World, new_id

HOUR = 3600.0
PLAN_TYPES = {
    "ml.p4d.24xlarge": 32.77,
    "ml.p5.48xlarge": 55.04,
    "ml.p5e.48xlarge": 60.0,
    "ml.p5en.48xlarge": 63.3,
    "ml.trn1.32xlarge": 21.5,
    "ml.trn2.48xlarge": 35.0,
    "ml.p6-b200.48xlarge": 88.0,
    "ml.p4de.24xlarge": 40.0,
    "ml.p5.4xlarge": 7.0,
}


def _offering_id(spec: dict[str, Any]) -> str:
    return "tpo-" + hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:24]


@handles("sagemaker", "SearchTrainingPlanOfferings")
def search_offerings(ctx: Ctx) -> Response:
    p = ctx.params
    itype = p.get("InstanceType", "ml.p5.48xlarge")
    count = int(p.get("InstanceCount") or 1)
    hours = int(p.get("DurationHours") or 24)
    now = ctx.world.now()
    start = max(float(p.get("StartTimeAfter") or now), now) + HOUR
    targets = p.get("TargetResources") or ["hyperpod-cluster"]
    offerings = []
    for i, zone_letter in enumerate("abc"):
        s = start + i * 24 * HOUR
        spec = {
            "InstanceType": itype,
            "InstanceCount": count,
            "DurationHours": hours,
            "StartTime": round(s),
            "AvailabilityZone": f"{ctx.region}{zone_letter}",
            "TargetResources": targets,
        }
        oid = _offering_id(spec)
        ctx.world.table("training_plan_offerings", ctx.account, ctx.region)[oid] = spec
        fee = PLAN_TYPES.get(itype, 40.0) * count * hours
        offerings.append(
            {
                "TrainingPlanOfferingId": oid,
                "TargetResources": targets,
                "DurationHours": hours,
                "DurationMinutes": 0,
                "UpfrontFee": f"{fee:.2f}",
                "CurrencyCode": "USD",
                "ReservedCapacityOfferings": [
                    {
                        "ReservedCapacityType": "Instance",
                        "InstanceType": itype,
                        "InstanceCount": count,
                        "AvailabilityZone": spec["AvailabilityZone"],
                        "DurationHours": hours,
                        "DurationMinutes": 0,
                        "StartTime": s,
                        "EndTime": s + hours * HOUR,
                    }
                ],
            }
        )
    return ctx.ok({"TrainingPlanOfferings": offerings})


@handles("sagemaker", "CreateTrainingPlan")
def create_plan(ctx: Ctx) -> Response:
    p = ctx.params
    name = p["TrainingPlanName"]
    plans = ctx.world.table("training_plans", ctx.account, ctx.region)
    if name in plans:
        raise AwsError("ResourceInUse", f"Training plan with name {name} already exists.", 400)
    spec = ctx.world.table("training_plan_offerings", ctx.account, ctx.region).get(p["TrainingPlanOfferingId"])
    if spec is None:
        raise AwsError("ResourceNotFound", f"Training plan offering {p['TrainingPlanOfferingId']} not found.", 400)
    arn = f"arn:aws:sagemaker:{ctx.region}:{ctx.account}:training-plan/{name}"
    hours = spec["DurationHours"]
    fee = PLAN_TYPES.get(spec["InstanceType"], 40.0) * spec["InstanceCount"] * hours
    rc = {
        "ReservedCapacityArn": f"arn:aws:sagemaker:{ctx.region}:{ctx.account}:reserved-capacity/{new_id('', 16)}",
        "ReservedCapacityType": "Instance",
        "InstanceType": spec["InstanceType"],
        "TotalInstanceCount": spec["InstanceCount"],
        "Status": "Pending",
        "AvailabilityZone": spec["AvailabilityZone"],
        "DurationHours": hours,
        "DurationMinutes": 0,
        "StartTime": spec["StartTime"],
        "EndTime": spec["StartTime"] + hours * HOUR,
    }
    plans[name] = {
        "TrainingPlanArn": arn,
        "TrainingPlanName": name,
        "Status": "Pending",
        "StatusMessage": "Payment pending",
        "DurationHours": hours,
        "DurationMinutes": 0,
        "StartTime": spec["StartTime"],
        "EndTime": spec["StartTime"] + hours * HOUR,
        "UpfrontFee": f"{fee:.2f}",
        "CurrencyCode": "USD",
        "TotalInstanceCount": spec["InstanceCount"],
        "AvailableInstanceCount": spec["InstanceCount"],
        "InUseInstanceCount": 0,
        "TargetResources": spec["TargetResources"],
        "ReservedCapacitySummaries": [rc],
        "_due": ctx.world.due("training_plan"),
        "_tags": p.get("Tags") or [],
    }
    return ctx.ok({"TrainingPlanArn": arn})


def _plan_view(tp: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in tp.items() if not k.startswith("_")}


@handles("sagemaker", "DescribeTrainingPlan")
def describe_plan(ctx: Ctx) -> Response:
    name = ctx.params["TrainingPlanName"]
    tp = ctx.world.table("training_plans", ctx.account, ctx.region).get(name.rsplit("/", 1)[-1])
    if tp is None:
        raise AwsError("ResourceNotFound", f"Training plan {name} not found.", 400)
    return ctx.ok(_plan_view(tp))


@handles("sagemaker", "ListTrainingPlans")
def list_plans(ctx: Ctx) -> Response:
    p = ctx.params
    items = [_plan_view(tp) for tp in ctx.world.table("training_plans", ctx.account, ctx.region).values()]
    for f in p.get("Filters") or []:
        if f["Name"] == "Status":
            items = [t for t in items if t["Status"] == f["Value"]]
    summary_keys = (
        "TrainingPlanArn",
        "TrainingPlanName",
        "Status",
        "StatusMessage",
        "DurationHours",
        "DurationMinutes",
        "StartTime",
        "EndTime",
        "UpfrontFee",
        "CurrencyCode",
        "TotalInstanceCount",
        "AvailableInstanceCount",
        "InUseInstanceCount",
        "TargetResources",
        "ReservedCapacitySummaries",
    )
    return ctx.ok({"TrainingPlanSummaries": [{k: t[k] for k in summary_keys if k in t} for t in items]})


def tick_misc(world: World) -> None:
    now = world.now()
    for _, _, tbl in world.tables("training_plans"):
        for tp in tbl.values():
            if tp.get("_due") and now >= tp["_due"]:
                tp["_due"] = None
                status = "Active" if tp["StartTime"] <= now else "Scheduled"
                tp["Status"], tp["StatusMessage"] = status, ""
                for rc in tp["ReservedCapacitySummaries"]:
                    rc["Status"] = status
                world.touch()


# ---- tags on the resources we own (moto's AddTags/ListTags only know moto's own resources) -------
def _tagged(ctx: Ctx, arn: str) -> dict[str, Any] | None:
    for kind, key in (
        ("hp_clusters", "ClusterArn"),
        ("training_plans", "TrainingPlanArn"),
        ("mlflow", "TrackingServerArn"),
        ("mlflow_apps", "Arn"),
    ):
        for rec in ctx.world.table(kind, ctx.account, ctx.region).values():
            if rec.get(key) == arn:
                return rec
    return None


@handles("sagemaker", "AddTags")
def add_tags(ctx: Ctx) -> Response | None:
    rec = _tagged(ctx, ctx.params.get("ResourceArn", ""))
    if rec is None:
        return None
    tags = {t["Key"]: t["Value"] for t in rec.get("_tags", [])}
    tags.update({t["Key"]: t["Value"] for t in ctx.params.get("Tags", [])})
    rec["_tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
    return ctx.ok({"Tags": rec["_tags"]})


@handles("sagemaker", "ListTags")
def list_tags(ctx: Ctx) -> Response | None:
    rec = _tagged(ctx, ctx.params.get("ResourceArn", ""))
    if rec is None:
        return None
    return ctx.ok({"Tags": rec.get("_tags", [])})


@handles("sagemaker", "DeleteTags")
def delete_tags(ctx: Ctx) -> Response | None:
    rec = _tagged(ctx, ctx.params.get("ResourceArn", ""))
    if rec is None:
        return None
    drop = set(ctx.params.get("TagKeys", []))
    rec["_tags"] = [t for t in rec.get("_tags", []) if t["Key"] not in drop]
    return ctx.ok({})
