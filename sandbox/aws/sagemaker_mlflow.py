"""SageMaker managed MLflow: tracking servers and MLflow Apps (moto has neither), each backed by a real
`mlflow server` on 127.0.0.1 (sandbox/mlflow_server.py).

What differs from AWS, on purpose: TrackingServerUrl is the local server's `http://127.0.0.1:<port>`
(not `https://t-….experiments.sagemaker.aws`), requests need no SigV4, artifacts are kept on disk
under the sandbox state dir instead of ArtifactStoreUri, and a presigned URL does not expire.
"""

from __future__ import annotations

import secrets
from typing import Any

from sandbox.aws.handlers import Ctx, handles
from sandbox.aws.protocol import AwsError, Response
from sandbox.aws.world import World, new_id

TS_TABLE = "mlflow"
APP_TABLE = "mlflow_apps"
DEFAULT_VERSION = "3.0"
# statuses in which the server process runs and answers
_RUNNING = {"Created", "Updating", "Updated", "Started", "MaintenanceInProgress", "MaintenanceComplete"}
_TRANSITIONAL = {"Creating", "Updating", "Starting", "Stopping", "Deleting", "MaintenanceInProgress"}


def process_key(account: str, region: str, kind: str, ident: str) -> str:
    """The MlflowServers key of a tracking server ("ts") or an app ("app")."""
    return f"{account}/{region}/{kind}-{ident}"


def _servers(world: World) -> Any:
    servers = getattr(world, "mlflow", None)
    if servers is None:
        raise AwsError("InternalFailure", "MLflow is not available in this sandbox.", 500)
    return servers


def _view(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rec.items() if not k.startswith("_")}


def _update(rec: dict[str, Any], params: dict[str, Any], *keys: str) -> None:
    """An Update* call changes only the fields it sends."""
    rec.update({k: params[k] for k in keys if k in params})


def _page(ctx: Ctx, items: list[dict[str, Any]], name_key: str, status_key: str) -> tuple[list[Any], str | None]:
    p = ctx.params
    if p.get("CreatedAfter") is not None:
        items = [i for i in items if i["CreationTime"] > float(p["CreatedAfter"])]
    if p.get("CreatedBefore") is not None:
        items = [i for i in items if i["CreationTime"] < float(p["CreatedBefore"])]
    if p.get("MlflowVersion"):
        items = [i for i in items if i.get("MlflowVersion") == p["MlflowVersion"]]
    sort_key = {"Name": name_key, "Status": status_key}.get(p.get("SortBy") or "", "CreationTime")
    items.sort(key=lambda i: i.get(sort_key) or "", reverse=(p.get("SortOrder") or "Descending") == "Descending")
    start = int(p.get("NextToken") or 0)
    size = int(p.get("MaxResults") or 100)
    nxt = str(start + size) if start + size < len(items) else None
    return items[start : start + size], nxt


# ---- tracking servers ---------------------------------------------------------------------------
def _server(ctx: Ctx) -> dict[str, Any]:
    name = ctx.params["TrackingServerName"]
    rec = ctx.world.table(TS_TABLE, ctx.account, ctx.region).get(name)
    if rec is None:
        raise AwsError("ResourceNotFound", f"Tracking server {name} not found.", 400)
    return rec


def _ts_key(ctx: Ctx, name: str) -> str:
    return process_key(ctx.account, ctx.region, "ts", name)


@handles("sagemaker", "CreateMlflowTrackingServer")
def create_tracking_server(ctx: Ctx) -> Response:
    p = ctx.params
    name = p["TrackingServerName"]
    tbl = ctx.world.table(TS_TABLE, ctx.account, ctx.region)
    if name in tbl:
        raise AwsError("ResourceInUse", f"Tracking server {name} already exists.", 400)
    now = ctx.world.now()
    port = _servers(ctx.world).ensure(_ts_key(ctx, name))
    tbl[name] = {
        "TrackingServerArn": f"arn:aws:sagemaker:{ctx.region}:{ctx.account}:mlflow-tracking-server/{name}",
        "TrackingServerName": name,
        "ArtifactStoreUri": p["ArtifactStoreUri"],
        "TrackingServerSize": p.get("TrackingServerSize", "Small"),
        "MlflowVersion": p.get("MlflowVersion") or DEFAULT_VERSION,
        "RoleArn": p["RoleArn"],
        "TrackingServerStatus": "Creating",
        "IsActive": "Inactive",
        "TrackingServerUrl": f"http://127.0.0.1:{port}",
        "WeeklyMaintenanceWindowStart": p.get("WeeklyMaintenanceWindowStart", "Tue:03:30"),
        "AutomaticModelRegistration": bool(p.get("AutomaticModelRegistration", False)),
        "CreationTime": now,
        "LastModifiedTime": now,
        "_port": port,
        "_due": ctx.world.due("mlflow_create"),
        "_tags": p.get("Tags") or [],
    }
    for k in ("S3BucketOwnerAccountId", "S3BucketOwnerVerification"):
        if k in p:
            tbl[name][k] = p[k]
    return ctx.ok({"TrackingServerArn": tbl[name]["TrackingServerArn"]})


@handles("sagemaker", "DescribeMlflowTrackingServer")
def describe_tracking_server(ctx: Ctx) -> Response:
    return ctx.ok(_view(_server(ctx)))


@handles("sagemaker", "ListMlflowTrackingServers")
def list_tracking_servers(ctx: Ctx) -> Response:
    keys = (
        "TrackingServerArn",
        "TrackingServerName",
        "CreationTime",
        "LastModifiedTime",
        "TrackingServerStatus",
        "IsActive",
        "MlflowVersion",
    )
    status = ctx.params.get("TrackingServerStatus")
    items = [
        {k: t[k] for k in keys}
        for t in ctx.world.table(TS_TABLE, ctx.account, ctx.region).values()
        if not status or t["TrackingServerStatus"] == status
    ]
    page, nxt = _page(ctx, items, "TrackingServerName", "TrackingServerStatus")
    out: dict[str, Any] = {"TrackingServerSummaries": page}
    if nxt:
        out["NextToken"] = nxt
    return ctx.ok(out)


def _conflict(rec: dict[str, Any], verb: str) -> AwsError:
    return AwsError(
        "ConflictException",
        f"Tracking server {rec['TrackingServerName']} is in {rec['TrackingServerStatus']} status and cannot be {verb}.",
        400,
    )


@handles("sagemaker", "UpdateMlflowTrackingServer")
def update_tracking_server(ctx: Ctx) -> Response:
    rec = _server(ctx)
    if rec["TrackingServerStatus"] not in _RUNNING - {"Updating", "MaintenanceInProgress"}:
        raise _conflict(rec, "updated")
    _update(
        rec,
        ctx.params,
        "ArtifactStoreUri",
        "TrackingServerSize",
        "AutomaticModelRegistration",
        "WeeklyMaintenanceWindowStart",
        "S3BucketOwnerAccountId",
        "S3BucketOwnerVerification",
    )
    rec.update(TrackingServerStatus="Updating", LastModifiedTime=ctx.world.now(), _due=ctx.world.due("mlflow_update"))
    return ctx.ok({"TrackingServerArn": rec["TrackingServerArn"]})


@handles("sagemaker", "StopMlflowTrackingServer")
def stop_tracking_server(ctx: Ctx) -> Response:
    rec = _server(ctx)
    if rec["TrackingServerStatus"] not in _RUNNING - {"Updating", "MaintenanceInProgress"}:
        raise _conflict(rec, "stopped")
    _servers(ctx.world).stop(_ts_key(ctx, rec["TrackingServerName"]))
    rec.update(
        TrackingServerStatus="Stopping",
        IsActive="Inactive",
        LastModifiedTime=ctx.world.now(),
        _due=ctx.world.due("mlflow_stop"),
    )
    return ctx.ok({"TrackingServerArn": rec["TrackingServerArn"]})


@handles("sagemaker", "StartMlflowTrackingServer")
def start_tracking_server(ctx: Ctx) -> Response:
    rec = _server(ctx)
    if rec["TrackingServerStatus"] not in ("Stopped", "StartFailed", "StopFailed"):
        raise _conflict(rec, "started")
    rec["_port"] = _servers(ctx.world).ensure(_ts_key(ctx, rec["TrackingServerName"]), rec.get("_port"))
    rec.update(
        TrackingServerStatus="Starting",
        TrackingServerUrl=f"http://127.0.0.1:{rec['_port']}",
        LastModifiedTime=ctx.world.now(),
        _due=ctx.world.due("mlflow_start"),
    )
    return ctx.ok({"TrackingServerArn": rec["TrackingServerArn"]})


@handles("sagemaker", "DeleteMlflowTrackingServer")
def delete_tracking_server(ctx: Ctx) -> Response:
    rec = _server(ctx)
    if rec["TrackingServerStatus"] in _TRANSITIONAL - {"Deleting"}:
        raise AwsError(
            "ValidationException",
            f"Tracking server {rec['TrackingServerName']} is in "
            f"{rec['TrackingServerStatus']} status and cannot be deleted.",
            400,
        )
    if rec["TrackingServerStatus"] != "Deleting":
        _servers(ctx.world).remove(_ts_key(ctx, rec["TrackingServerName"]))
        rec.update(TrackingServerStatus="Deleting", IsActive="Inactive", _due=ctx.world.due("mlflow_delete"))
    return ctx.ok({"TrackingServerArn": rec["TrackingServerArn"]})


def _authorized_url(base: str) -> str:
    return f"{base}/?authToken={secrets.token_urlsafe(24)}"


@handles("sagemaker", "CreatePresignedMlflowTrackingServerUrl")
def presigned_tracking_server_url(ctx: Ctx) -> Response:
    rec = _server(ctx)
    if rec["IsActive"] != "Active":
        raise AwsError(
            "ValidationException",
            f"Tracking server {rec['TrackingServerName']} is not active (status {rec['TrackingServerStatus']}).",
            400,
        )
    return ctx.ok({"AuthorizedUrl": _authorized_url(rec["TrackingServerUrl"])})


# ---- MLflow Apps ----------------------------------------------------------------------------------
def _app(ctx: Ctx) -> dict[str, Any]:
    arn = ctx.params["Arn"]
    app_id = arn.rsplit("/", 1)[-1]
    rec = ctx.world.table(APP_TABLE, ctx.account, ctx.region).get(app_id)
    if rec is None or rec["Arn"] != arn:
        raise AwsError("ResourceNotFound", f"MLflow App {arn} not found.", 400)
    return rec


@handles("sagemaker", "CreateMlflowApp")
def create_app(ctx: Ctx) -> Response:
    p = ctx.params
    app_id = "app-" + new_id("", 12, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    now = ctx.world.now()
    port = _servers(ctx.world).ensure(process_key(ctx.account, ctx.region, "app", app_id))
    rec: dict[str, Any] = {
        "Arn": f"arn:aws:sagemaker:{ctx.region}:{ctx.account}:mlflow-app/{app_id}",
        "Name": p["Name"],
        "ArtifactStoreUri": p["ArtifactStoreUri"],
        "MlflowVersion": DEFAULT_VERSION,
        "RoleArn": p["RoleArn"],
        "Status": "Creating",
        "ModelRegistrationMode": p.get("ModelRegistrationMode", "AutoModelRegistrationDisabled"),
        "AccountDefaultStatus": p.get("AccountDefaultStatus", "DISABLED"),
        "DefaultDomainIdList": p.get("DefaultDomainIdList") or [],
        "WeeklyMaintenanceWindowStart": p.get("WeeklyMaintenanceWindowStart", "Tue:03:30"),
        "CreationTime": now,
        "LastModifiedTime": now,
        "_port": port,
        "_due": ctx.world.due("mlflow_app_create"),
        "_tags": p.get("Tags") or [],
    }
    if p.get("KmsKeyId"):
        rec["KmsKeyId"] = p["KmsKeyId"]
    ctx.world.table(APP_TABLE, ctx.account, ctx.region)[app_id] = rec
    return ctx.ok({"Arn": rec["Arn"]})


@handles("sagemaker", "DescribeMlflowApp")
def describe_app(ctx: Ctx) -> Response:
    return ctx.ok(_view(_app(ctx)))


@handles("sagemaker", "ListMlflowApps")
def list_apps(ctx: Ctx) -> Response:
    p = ctx.params
    keys = ("Arn", "Name", "Status", "CreationTime", "LastModifiedTime", "MlflowVersion")
    items = [
        {k: a[k] for k in keys}
        for a in ctx.world.table(APP_TABLE, ctx.account, ctx.region).values()
        if (not p.get("Status") or a["Status"] == p["Status"])
        and (not p.get("AccountDefaultStatus") or a["AccountDefaultStatus"] == p["AccountDefaultStatus"])
        and (not p.get("DefaultForDomainId") or p["DefaultForDomainId"] in a["DefaultDomainIdList"])
    ]
    page, nxt = _page(ctx, items, "Name", "Status")
    out: dict[str, Any] = {"Summaries": page}
    if nxt:
        out["NextToken"] = nxt
    return ctx.ok(out)


@handles("sagemaker", "UpdateMlflowApp")
def update_app(ctx: Ctx) -> Response:
    rec = _app(ctx)
    if rec["Status"] not in ("Created", "Updated"):
        raise AwsError("ConflictException", f"MLflow App {rec['Arn']} is in {rec['Status']} status.", 400)
    _update(
        rec,
        ctx.params,
        "Name",
        "ArtifactStoreUri",
        "ModelRegistrationMode",
        "WeeklyMaintenanceWindowStart",
        "DefaultDomainIdList",
        "AccountDefaultStatus",
    )
    rec.update(Status="Updating", LastModifiedTime=ctx.world.now(), _due=ctx.world.due("mlflow_update"))
    return ctx.ok({"Arn": rec["Arn"]})


@handles("sagemaker", "DeleteMlflowApp")
def delete_app(ctx: Ctx) -> Response:
    rec = _app(ctx)
    if rec["Status"] in ("Creating", "Updating"):
        raise AwsError(
            "ValidationException", f"MLflow App {rec['Arn']} is in {rec['Status']} status and cannot be deleted.", 400
        )
    if rec["Status"] != "Deleting":
        app_id = rec["Arn"].rsplit("/", 1)[-1]
        _servers(ctx.world).remove(process_key(ctx.account, ctx.region, "app", app_id))
        rec.update(Status="Deleting", _due=ctx.world.due("mlflow_delete"))
    return ctx.ok({"Arn": rec["Arn"]})


@handles("sagemaker", "CreatePresignedMlflowAppUrl")
def presigned_app_url(ctx: Ctx) -> Response:
    rec = _app(ctx)
    if rec["Status"] not in ("Created", "Updating", "Updated"):
        raise AwsError("ValidationException", f"MLflow App {rec['Arn']} is in {rec['Status']} status.", 400)
    return ctx.ok({"AuthorizedUrl": _authorized_url(f"http://127.0.0.1:{rec['_port']}")})


# ---- the controller tick and the sandbox's own uses ------------------------------------------------
def tick_mlflow(world: World) -> None:
    """Finish the transitions whose time has come; a server becomes Created/Started only once its
    process answers, and Stopped only once it has exited."""
    servers = getattr(world, "mlflow", None)
    if servers is None:
        return
    now = world.now()
    for account, region, tbl in world.tables(TS_TABLE):
        for name, rec in list(tbl.items()):
            if not rec.get("_due") or now < rec["_due"]:
                continue
            key = process_key(account, region, "ts", name)
            status = rec["TrackingServerStatus"]
            nxt = {"Creating": "Created", "Starting": "Started", "Updating": "Updated"}.get(status)
            if nxt and servers.healthy(key):
                rec.update(TrackingServerStatus=nxt, IsActive="Active", LastModifiedTime=now, _due=None)
            elif status == "Stopping" and servers.stopped(key):
                rec.update(TrackingServerStatus="Stopped", LastModifiedTime=now, _due=None)
            elif status == "Deleting" and servers.stopped(key):
                tbl.pop(name)
            else:
                continue
            world.touch()
    for account, region, tbl in world.tables(APP_TABLE):
        for app_id, rec in list(tbl.items()):
            if not rec.get("_due") or now < rec["_due"]:
                continue
            key = process_key(account, region, "app", app_id)
            nxt = {"Creating": "Created", "Updating": "Updated"}.get(rec["Status"])
            if nxt and servers.healthy(key):
                rec.update(Status=nxt, LastModifiedTime=now, _due=None)
            elif rec["Status"] == "Deleting" and servers.stopped(key):
                tbl.pop(app_id)
            else:
                continue
            world.touch()


def resume_servers(world: World) -> None:
    """At sandbox start: bring back the processes of the servers and apps the saved state has running
    (in the background; their status stays as saved)."""
    servers = world.mlflow  # type: ignore[attr-defined]
    for account, region, tbl in world.tables(TS_TABLE):
        for name, rec in tbl.items():
            if rec["TrackingServerStatus"] in _RUNNING | {"Creating", "Starting"}:
                rec["_port"] = servers.ensure(process_key(account, region, "ts", name), rec.get("_port"))
                rec["TrackingServerUrl"] = f"http://127.0.0.1:{rec['_port']}"
            elif rec["TrackingServerStatus"] == "Deleting":
                servers.remove(process_key(account, region, "ts", name))
    for account, region, tbl in world.tables(APP_TABLE):
        for app_id, rec in tbl.items():
            if rec["Status"] != "Deleting":
                rec["_port"] = servers.ensure(process_key(account, region, "app", app_id), rec.get("_port"))


def tracking_base_url(world: World, uri: str) -> str | None:
    """Where a pod's MLFLOW_TRACKING_URI leads: a loopback URL as it is, a tracking-server or MLflow App
    ARN to its local server while that runs; None for anything else (never a non-loopback host)."""
    uri = (uri or "").strip().rstrip("/")
    if uri.startswith(("http://127.0.0.1:", "http://localhost:")):
        return uri
    parts = uri.split(":")
    if len(parts) < 6 or parts[0] != "arn" or parts[2] != "sagemaker":
        return None
    region, account, resource = parts[3], parts[4], ":".join(parts[5:])
    kind, _, ident = resource.partition("/")
    servers = getattr(world, "mlflow", None)
    if servers is None:
        return None
    with world.lock:
        if kind == "mlflow-tracking-server":
            rec = world.table(TS_TABLE, account, region).get(ident)
            key = process_key(account, region, "ts", ident)
        elif kind == "mlflow-app":
            rec = world.table(APP_TABLE, account, region).get(ident)
            key = process_key(account, region, "app", ident)
        else:
            return None
    if rec is None or not servers.healthy(key):
        return None
    return str(servers.url(key))
