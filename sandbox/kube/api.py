"""HTTP front of the emulated kube-apiserver: routing, discovery, verbs, patch flavours.

A WSGI app over `KubeWorld`; PATH_INFO is `/k8s/{account}/{region}/{cluster}/<kube path>`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import yaml

from . import errors, proxy
from . import logs as pod_logs
from .apply import fields_v1, remove_unapplied
from .errors import ApiError
from .patch import json_patch, merge_patch, strategic_merge
from .resources import BUILTIN_GROUPS, ResourceType
from .selectors import parse_field_selector, parse_label_selector
from .store import Cluster, now_iso
from .table import to_table
from .util import clone
from .watch import present, watch_stream

if TYPE_CHECKING:
    from .world import KubeWorld

Obj = dict[str, Any]
StartResponse = Callable[..., Any]

_REASONS = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    409: "Conflict",
    410: "Gone",
    415: "Unsupported Media Type",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    502: "Bad Gateway",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class Response:
    def __init__(
        self,
        code: int,
        body: Any = None,
        content_type: str = "application/json",
        stream: Iterator[bytes] | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        self.code = code
        self.body = body
        self.content_type = content_type
        self.stream = stream
        self.headers = headers or []  # extra headers (proxied answers keep the upstream's)


_RETURNS_DELETED = {"/pods", "/namespaces", "/services", "/persistentvolumes", "/persistentvolumeclaims"}


def _status_ok(details: dict[str, Any] | None = None) -> Obj:
    out: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        out["details"] = details
    return out


def valid_token(header: str | None) -> bool:
    """EKS bearer tokens: `k8s-aws-v1.` + base64url(presigned STS GetCallerIdentity URL)."""
    if not header or not header.startswith("Bearer "):
        return False
    token = header[len("Bearer ") :].strip()
    if not token.startswith("k8s-aws-v1."):
        return False
    payload = token[len("k8s-aws-v1.") :]
    if not payload:
        return False
    try:
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    except (binascii.Error, ValueError):
        return False
    return True


class KubeApi:
    def __init__(self, world: KubeWorld) -> None:
        self.world = world

    # ------------------------------------------------------------ WSGI

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            resp = self.dispatch(environ)
        except ApiError as e:
            resp = Response(e.code, e.status())
        except Exception as e:  # noqa: BLE001 - an emulator bug must surface as a 500 Status, not a hang
            import traceback

            traceback.print_exc()
            resp = Response(500, ApiError(500, "InternalError", f"sandbox kube error: {e!r}").status())
        headers = [("Content-Type", resp.content_type), ("Cache-Control", "no-cache, private"), ("Audit-Id", "sandbox")]
        headers += [h for h in resp.headers if h[0].lower() not in ("cache-control", "audit-id")]
        status = f"{resp.code} {_REASONS.get(resp.code) or _phrase(resp.code)}"
        if resp.stream is not None:
            start_response(status, headers)
            return resp.stream
        if isinstance(resp.body, bytes | str):
            data = resp.body.encode() if isinstance(resp.body, str) else resp.body
        else:
            data = json.dumps(resp.body).encode()
        headers.append(("Content-Length", str(len(data))))
        start_response(status, headers)
        return [data]

    def dispatch(self, environ: dict[str, Any]) -> Response:
        path = environ.get("PATH_INFO", "")
        parts = [p for p in path.split("/") if p]
        if len(parts) < 4 or parts[0] != "k8s":
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        key = "/".join(parts[1:4])
        cluster = self.world.clusters.get(key)
        if cluster is None:
            raise ApiError(404, "NotFound", f"no Kubernetes API server for cluster {key}")
        rest = parts[4:]
        if rest and rest[0] in ("healthz", "livez", "readyz"):
            return Response(200, "ok", "text/plain")
        q = {k: v[-1] for k, v in parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True).items()}
        req = Request(environ, q)
        # like EKS (system:public-info-viewer), /version is readable without credentials
        if rest != ["version"] and not self.authorized(environ):
            raise errors.unauthorized()
        if proxy.is_proxy(rest):
            # resolved under the cluster lock, forwarded without it (answers can stream for minutes)
            code, body, ctype, stream, headers = proxy.handle(self.world, cluster, rest, req)
            return Response(code, body, ctype, stream=stream, headers=headers)
        with cluster.lock:
            cluster.field_validation = q.get("fieldValidation")
            try:
                return self.route(cluster, rest, req)
            finally:
                cluster.field_validation = None

    def authorized(self, environ: dict[str, Any]) -> bool:
        header = environ.get("HTTP_AUTHORIZATION")
        if header:
            return valid_token(header)
        # kubectl (client-go) never sends credentials over plain http, and the sandbox serves http
        # on 127.0.0.1 only: a request *without* any Authorization header from kubectl is let in so that
        # `kubectl --server ... --token ...` works. Everything else must carry a valid EKS token.
        ua = environ.get("HTTP_USER_AGENT", "")
        return self.world.kubectl_anonymous and ua.startswith("kubectl")

    # ------------------------------------------------------------ routing

    def route(self, c: Cluster, segs: list[str], req: Request) -> Response:
        if not segs:
            return Response(200, {"paths": ["/api", "/api/v1", "/apis", "/version"]})
        if segs == ["version"]:
            major, minor = (c.version.split(".") + ["0"])[:2]
            return Response(
                200,
                {
                    "major": major,
                    "minor": minor + "+",
                    "gitVersion": f"v{c.version}.0-eks-sandbox",
                    "gitCommit": "0000000",
                    "gitTreeState": "clean",
                    "buildDate": "2025-01-01T00:00:00Z",
                    "goVersion": "go1.23.0",
                    "compiler": "gc",
                    "platform": "linux/amd64",
                },
            )
        if segs[0] == "openapi":
            return self.openapi(c, segs)
        if segs[0] == "api":
            if len(segs) == 1:
                return Response(
                    200,
                    {
                        "kind": "APIVersions",
                        "versions": ["v1"],
                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
                    },
                )
            group, version, rest = "", segs[1], segs[2:]
        elif segs[0] == "apis":
            if len(segs) == 1:
                return Response(200, self.group_list(c))
            if len(segs) == 2:
                g = next((x for x in self.group_list(c)["groups"] if x["name"] == segs[1]), None)
                if g is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return Response(200, dict(g, kind="APIGroup", apiVersion="v1"))
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            return Response(200, self.resource_list(c, group, version))
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            rt_ns = c.find_type(group, version, rest[2])
            if rt_ns is not None and rt_ns.namespaced:
                namespace = rest[1]
                rest = rest[2:]
        rt = c.find_type(group, version, rest[0])
        if rt is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if rt.namespaced is False and namespace is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in rt.subresources and not (rt.gr == "/namespaces" and sub == "finalize"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return self.verb(c, rt, namespace, name, sub, req)

    def openapi(self, c: Cluster, segs: list[str]) -> Response:
        """A skeleton OpenAPI v3: per group-version, the PATCH operations with their GVK and the
        `fieldValidation` parameter. That is what kubectl reads to choose server-side field validation;
        without request-body schemas it computes apply patches from its compiled-in types (as it does
        with any server whose OpenAPI lacks them). /openapi/v2 (protobuf) is not served."""
        if len(segs) < 2 or segs[1] != "v3":
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        gvs: dict[str, list[ResourceType]] = {}
        for rt in c.types.values():
            gv = f"api/{rt.version}" if not rt.group else f"apis/{rt.group}/{rt.version}"
            gvs.setdefault(gv, []).append(rt)
        if len(segs) == 2:
            return Response(
                200, {"paths": {gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={c.rv}"} for gv in sorted(gvs)}}
            )
        gv = "/".join(segs[2:])
        if gv not in gvs:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        paths: dict[str, Any] = {}
        params = [
            {"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for n in ("dryRun", "fieldManager", "fieldValidation", "force")
        ]
        for rt in gvs[gv]:
            base = (
                f"/{gv}/namespaces/{{namespace}}/{rt.plural}/{{name}}"
                if rt.namespaced
                else f"/{gv}/{rt.plural}/{{name}}"
            )
            gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
            paths[base] = {
                "patch": {
                    "operationId": f"patch{rt.kind}",
                    "parameters": params,
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": gvk,
                    "responses": {"200": {"description": "OK"}},
                }
            }
        return Response(
            200,
            {
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes", "version": f"v{c.version}"},
                "paths": paths,
                "components": {"schemas": {}},
            },
        )

    def group_list(self, c: Cluster) -> Obj:
        groups: dict[str, list[str]] = {}
        for g in BUILTIN_GROUPS:
            groups[g] = []
        for rt in c.types.values():
            if rt.group:
                vs = groups.setdefault(rt.group, [])
                if rt.version not in vs:
                    vs.append(rt.version)
        out = []
        for g, vs in groups.items():
            vs = sorted(vs, key=_version_priority)
            out.append(
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
                    "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]},
                }
            )
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}

    def resource_list(self, c: Cluster, group: str, version: str) -> Obj:
        res = []
        for rt in c.types.values():
            if rt.group == group and rt.version == version:
                res.extend(rt.discovery())
        if not res:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": res}

    # ------------------------------------------------------------ verbs

    def verb(
        self, c: Cluster, rt: ResourceType, ns: str | None, name: str | None, sub: str | None, req: Request
    ) -> Response:
        m = req.method
        ns_key = ns or ""
        if name is None:
            if m == "GET":
                if req.q.get("watch") in ("true", "1"):
                    return self.watch(c, rt, ns, req)
                return self.list(c, rt, ns, req)
            if m == "POST":
                body = req.json()
                if not isinstance(body, dict):
                    raise errors.bad_request("the body must be an object")
                self._check_kind(rt, body)
                obj = c.create(rt, body, ns_key, field_manager=req.q.get("fieldManager"), dry_run=req.dry_run)
                return Response(201, present(rt, obj))
            if m == "DELETE":
                return self.delete_collection(c, rt, ns, req)
            raise errors.method_not_allowed()
        if sub == "log":
            return self.logs(c, ns_key, name, req)
        if sub == "eviction":
            if m != "POST":
                raise errors.method_not_allowed()
            # no PodDisruptionBudget accounting: an eviction is a delete (kubectl drain uses it)
            c.delete(rt, ns_key, name, dry_run=req.dry_run)
            return Response(201, _status_ok())
        if sub == "scale":
            return self.scale(c, rt, ns_key, name, req)
        if m == "GET":
            if req.q.get("watch") in ("true", "1"):
                req.q["fieldSelector"] = f"metadata.name={name}"
                return self.watch(c, rt, ns, req)
            obj = present(rt, c.must_get(rt, ns_key, name))
            if "as=Table" in req.accept:
                return Response(200, self.table(c, rt, [obj], req))
            return Response(200, obj)
        if m == "PUT":
            body = req.json()
            if not isinstance(body, dict):
                raise errors.bad_request("the body must be an object")
            self._check_kind(rt, body)
            meta = body.setdefault("metadata", {})
            if meta.get("name") and meta["name"] != name:
                raise errors.bad_request(
                    f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
                )
            meta["name"] = name
            if rt.namespaced:
                meta["namespace"] = ns_key
            if sub == "finalize":
                sub = None
            obj = c.replace(rt, body, subresource=sub, field_manager=req.q.get("fieldManager"), dry_run=req.dry_run)
            return Response(200, present(rt, obj))
        if m == "PATCH":
            return self.patch(c, rt, ns_key, name, sub, req)
        if m == "DELETE":
            opts = req.json(allow_empty=True) or {}
            prop = (
                req.q.get("propagationPolicy")
                or opts.get("propagationPolicy")
                or ("Orphan" if opts.get("orphanDependents") is True else "Background")
            )
            pre = opts.get("preconditions") or {}
            obj = c.delete(
                rt,
                ns_key,
                name,
                propagation=prop,
                precondition_uid=pre.get("uid"),
                precondition_rv=pre.get("resourceVersion"),
                dry_run=req.dry_run,
            )
            # Kinds whose real storage sets ReturnDeletedObject (pods, namespaces, services, volumes and
            # claims) and custom objects answer with the object; the rest with a Status.
            if rt.crd or rt.gr in _RETURNS_DELETED or obj["metadata"].get("deletionTimestamp"):
                return Response(200, present(rt, obj))
            return Response(
                200, _status_ok({"name": name, "group": rt.group, "kind": rt.plural, "uid": obj["metadata"]["uid"]})
            )
        raise errors.method_not_allowed()

    @staticmethod
    def _check_kind(rt: ResourceType, body: Obj) -> None:
        kind = body.get("kind")
        if kind and kind != rt.kind:
            raise errors.bad_request(
                f"the API version in the data ({body.get('apiVersion')}) does not match "
                f"the expected API version ({rt.api_version})"
                if kind == rt.kind
                else f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}: kind mismatch'
            )

    def _pred(self, req: Request) -> Callable[[Obj], bool]:
        lp = parse_label_selector(req.q.get("labelSelector"))
        fp = parse_field_selector(req.q.get("fieldSelector"))
        return lambda o: lp(o) and fp(o)

    def list(self, c: Cluster, rt: ResourceType, ns: str | None, req: Request) -> Response:
        pred = self._pred(req)
        items = [present(rt, o) for o in c.list(rt.gr, ns) if pred(o)]
        if "as=Table" in req.accept:
            return Response(200, self.table(c, rt, items, req))
        return Response(
            200,
            {
                "kind": f"{rt.kind}List",
                "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": str(c.rv)},
                "items": items,
            },
        )

    def table(self, c: Cluster, rt: ResourceType, items: list[Obj], req: Request) -> Obj:
        columns = None
        if rt.crd:
            crd = c.get("apiextensions.k8s.io/customresourcedefinitions", "", rt.crd) or {}
            for v in (crd.get("spec") or {}).get("versions") or []:
                if v.get("name") == rt.version:
                    columns = v.get("additionalPrinterColumns")
        return to_table(rt.kind, items, str(c.rv), req.q.get("includeObject") or "Metadata", columns)

    def watch(self, c: Cluster, rt: ResourceType, ns: str | None, req: Request) -> Response:
        pred = self._pred(req)
        timeout = float(req.q["timeoutSeconds"]) if req.q.get("timeoutSeconds") else None
        rv = req.q.get("resourceVersion")
        transform = None
        if "as=Table" in req.accept:

            def transform(o: Obj) -> Obj:
                return self.table(c, rt, [o], req)

        # the generator takes the lock itself; the request lock is released when we return
        return Response(
            200, stream=watch_stream(c, rt, ns, pred, rv, timeout, transform, req.environ.get("werkzeug.socket"))
        )

    def delete_collection(self, c: Cluster, rt: ResourceType, ns: str | None, req: Request) -> Response:
        pred = self._pred(req)
        for o in [o for o in c.list(rt.gr, ns) if pred(o)]:
            if c.get(rt.gr, o["metadata"].get("namespace", ""), o["metadata"]["name"]) is not None:
                c.delete(rt, o["metadata"].get("namespace", ""), o["metadata"]["name"], dry_run=req.dry_run)
        return Response(200, _status_ok())

    # ------------------------------------------------------------ patch / apply

    def patch(self, c: Cluster, rt: ResourceType, ns: str, name: str, sub: str | None, req: Request) -> Response:
        ctype = req.content_type
        cur = c.get(rt.gr, ns, name)
        if ctype == "application/apply-patch+yaml":
            try:
                body = load_yaml(req.raw() or b"{}")
            except (ValueError, yaml.YAMLError) as e:
                raise errors.bad_request(f"error decoding YAML: {e}")
            if not isinstance(body, dict):
                raise errors.bad_request("apply patch must be an object")
            manager = req.q.get("fieldManager")
            if not manager:
                raise errors.bad_request("PATCH, application/apply-patch+yaml requires fieldManager to be set")
            self._check_kind(rt, body)
            meta = body.setdefault("metadata", {})
            if meta.get("name") and meta["name"] != name:
                raise errors.bad_request(
                    f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
                )
            meta["name"] = name
            strategic = not rt.crd
            fields = fields_v1(body, strategic)
            if cur is None:
                if sub:
                    raise errors.not_found(rt.group, rt.plural, name)
                obj = c.create(rt, body, ns, keep_status=False, dry_run=req.dry_run)
                if not req.dry_run:
                    obj = self._set_apply_manager(c, rt, obj, manager, fields)
                    c.sim.setdefault(obj["metadata"]["uid"], {}).setdefault("applied", {})[manager] = clone(body)
                return Response(201, present(rt, obj))
            new = strategic_merge(cur, body) if strategic else merge_patch(cur, body)
            applied = c.sim.setdefault(cur["metadata"]["uid"], {}).setdefault("applied", {})
            last = applied.get(f"{manager}/{sub}" if sub else manager)
            if last is not None:
                remove_unapplied(new, last, body, strategic)
            new["metadata"]["managedFields"] = _with_manager(
                cur["metadata"].get("managedFields"), manager, "Apply", rt, sub, fields
            )
            obj = c.replace(
                rt, new, subresource=sub, check_rv=bool(body["metadata"].get("resourceVersion")), dry_run=req.dry_run
            )
            if not req.dry_run:
                applied[f"{manager}/{sub}" if sub else manager] = clone(body)
            return Response(200, present(rt, obj))
        if cur is None:
            raise errors.not_found(rt.group, rt.plural, name)
        body = req.json()
        if ctype == "application/merge-patch+json" or ctype == "application/json":
            new = merge_patch(cur, body)
        elif ctype == "application/json-patch+json":
            new = json_patch(cur, body)
        elif ctype == "application/strategic-merge-patch+json":
            if rt.crd:
                raise errors.unsupported_media(ctype)
            new = strategic_merge(cur, body)
        else:
            raise errors.unsupported_media(ctype)
        if not isinstance(new, dict):
            raise errors.bad_request("patch result is not an object")
        want_rv = (body.get("metadata") or {}).get("resourceVersion") if isinstance(body, dict) else None
        new.setdefault("metadata", {})["name"] = name
        if rt.namespaced:
            new["metadata"]["namespace"] = ns
        if not want_rv:
            new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
        manager = req.q.get("fieldManager")
        obj = c.replace(rt, new, subresource=sub, field_manager=manager, dry_run=req.dry_run)
        return Response(200, present(rt, obj))

    def _set_apply_manager(self, c: Cluster, rt: ResourceType, obj: Obj, manager: str, fields: Obj) -> Obj:
        new = clone(obj)
        new["metadata"]["managedFields"] = _with_manager(None, manager, "Apply", rt, None, fields)
        new["metadata"]["resourceVersion"] = obj["metadata"]["resourceVersion"]
        # managedFields are metadata only: store in place without a new event (as part of the create)
        c.bucket(rt.gr)[(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = new
        for ev in reversed(c.history):
            if ev.obj is obj:
                ev.obj = new
                break
        return new

    # ------------------------------------------------------------ subresources

    def scale(self, c: Cluster, rt: ResourceType, ns: str, name: str, req: Request) -> Response:
        obj = c.must_get(rt, ns, name)
        if req.method in ("PUT", "PATCH"):
            body = req.json()
            if req.method == "PATCH":
                body = (
                    merge_patch(_scale_of(obj), body)
                    if req.content_type != "application/json-patch+json"
                    else json_patch(_scale_of(obj), body)
                )
            replicas = ((body or {}).get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid(
                    "autoscaling",
                    "Scale",
                    name,
                    [errors.cause("spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0")],
                )
            new = clone(obj)
            new["spec"]["replicas"] = replicas
            obj = c.replace(rt, new, check_rv=False)
        elif req.method != "GET":
            raise errors.method_not_allowed()
        return Response(200, _scale_of(obj))

    def logs(self, c: Cluster, ns: str, name: str, req: Request) -> Response:
        pod = c.get("/pods", ns, name)
        if pod is None:
            raise errors.not_found("", "pods", name)
        opts = pod_logs.options(pod, req.q)
        pod_logs.check_available(c, pod, opts)
        if opts.follow:
            return Response(
                200, content_type="text/plain", stream=pod_logs.follow(c, pod, opts, req.environ.get("werkzeug.socket"))
            )
        return Response(200, pod_logs.text(c, pod, opts), "text/plain")


class Request:
    def __init__(self, environ: dict[str, Any], q: dict[str, str]) -> None:
        self.environ = environ
        self.q = q
        self.method = environ.get("REQUEST_METHOD", "GET").upper()
        self.accept = environ.get("HTTP_ACCEPT", "") or ""
        self.content_type = (environ.get("CONTENT_TYPE") or "application/json").split(";")[0].strip().lower()
        self.dry_run = q.get("dryRun") == "All"
        self._raw: bytes | None = None

    def raw(self) -> bytes:
        if self._raw is None:
            stream = self.environ.get("wsgi.input")
            length = self.environ.get("CONTENT_LENGTH")
            if stream is None:
                self._raw = b""
            elif length:
                self._raw = stream.read(int(length))
            elif self.environ.get("wsgi.input_terminated"):
                self._raw = stream.read()
            else:
                self._raw = b""
        return self._raw

    def json(self, allow_empty: bool = False) -> Any:
        raw = self.raw()
        if not raw.strip():
            if allow_empty:
                return None
            raise errors.bad_request("the request body is empty")
        try:
            if self.content_type in ("application/yaml", "application/apply-patch+yaml"):
                return load_yaml(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as e:
            raise errors.bad_request(f"error decoding request body: {e}")


def load_yaml(raw: bytes) -> Any:
    """A YAML body. Clients (the official one, kubectl --server-side) mostly send JSON, which is YAML:
    parse it as JSON first, since pure-Python YAML takes seconds on a big CRD."""
    try:
        return json.loads(raw)
    except ValueError:
        return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _phrase(code: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return "Unknown"


def _version_priority(v: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, then by number (v1 before v1beta1)."""
    import re

    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", v)
    if not m:
        return (3, 0, 0)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor)


def _scale_of(obj: Obj) -> Obj:
    sel = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: obj["metadata"][k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in obj["metadata"]
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sel.items()),
        },
    }


def _with_manager(
    existing: Any, manager: str, operation: str, rt: ResourceType, sub: str | None, fields: Obj | None = None
) -> list[Obj]:
    out = [
        m
        for m in (existing or [])
        if not (m.get("manager") == manager and m.get("operation") == operation and m.get("subresource") == sub)
    ]
    entry: Obj = {
        "manager": manager,
        "operation": operation,
        "apiVersion": rt.api_version,
        "time": now_iso(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields or {},
    }
    if sub:
        entry["subresource"] = sub
    out.append(entry)
    return out
