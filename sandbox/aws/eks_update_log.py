"""The EKS updates the sandbox hands out (cluster version, add-on, nodegroup config): the record every
update-returning action writes, and its public view. DescribeUpdate/ListUpdates live in eks_updates.py."""

from __future__ import annotations

import uuid
from typing import Any

from sandbox.aws.world import World


def record_update(
    world: World,
    account: str,
    region: str,
    cluster: str,
    utype: str,
    params: list[dict[str, str]],
    duration_key: str,
    nodegroup: str | None = None,
    addon: str | None = None,
) -> dict[str, Any]:
    u = {
        "id": str(uuid.uuid4()),
        "status": "InProgress",
        "type": utype,
        "params": params,
        "createdAt": world.now(),
        "errors": [],
        "_cluster": cluster,
        "_nodegroup": nodegroup,
        "_addon": addon,
        "_due": world.due(duration_key),
    }
    world.table("eks_updates", account, region)[f"{cluster}/{u['id']}"] = u
    return u


def view(u: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in u.items() if not k.startswith("_")}
