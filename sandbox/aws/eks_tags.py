"""EKS TagResource / UntagResource / ListTagsForResource for what the sandbox keeps itself (add-ons,
pod identity associations, access entries); clusters and nodegroups stay moto's. A feature's
cleanup check lists what still carries its tag, so these must answer like the rest."""

from __future__ import annotations

from typing import Any

from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response

# ARN resource type -> (our table, the record's ARN field)
_OWN = {
    "addon": ("eks_addons", "addonArn"),
    "podidentityassociation": ("eks_pod_identity", "associationArn"),
    "access-entry": ("eks_access_entries", "accessEntryArn"),
}


def _record(ctx: Ctx) -> dict[str, Any] | None:
    arn = ctx.req.path_params.get("resourceArn", "")
    kind = arn.split(":", 5)[-1].split("/", 1)[0] if arn.count(":") >= 5 else ""
    if kind not in _OWN:
        return None
    table, field = _OWN[kind]
    return next((r for r in ctx.world.table(table, ctx.account, ctx.region).values() if r.get(field) == arn), {})


@handles("eks", "ListTagsForResource", "TagResource", "UntagResource")
def tags(ctx: Ctx) -> Response | None:
    record = _record(ctx)
    if record is None:
        return None  # a cluster or nodegroup: moto's
    if not record:
        raise AwsError("NotFoundException", "Resource was not found", 404)
    current = record.setdefault("tags", {})
    if ctx.req.action == "TagResource":
        current.update(ctx.params.get("tags") or {})
        return ctx.ok({})
    if ctx.req.action == "UntagResource":
        for key in ctx.req.query.get("tagKeys", []):
            current.pop(key, None)
        return ctx.ok({})
    return ctx.ok({"tags": dict(current)})
