"""One emulated cluster's state: objects, resourceVersions, watch history, logs, controller scratch.

Every mutation goes through `Cluster.create / replace / delete` so that the resourceVersion
counter, generation, watch history and ownerReference garbage collection behave like etcd +
kube-apiserver. Stored dicts are never mutated in place (callers deep-copy, change, and put
back), which lets the watch history keep references instead of copies.

All methods must be called with `cluster.lock` held (the API layer and tick() take it).
"""

from __future__ import annotations

import copy
import json
import random
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import admission
from .errors import ApiError, already_exists, conflict, forbidden, not_found
from .resources import BUILTIN, ResourceType, types_from_crd
from .schema import SchemaValidator
from .util import clone

Obj = dict[str, Any]

HISTORY = 20000  # watch events kept for resourceVersion-based resumption
MAX_LOG_LINES = 5000  # per container
MAX_EVENTS = 3000  # core/v1 Events per cluster
CRD_GR = "apiextensions.k8s.io/customresourcedefinitions"
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # k8s utilrand alphabet


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_iso_nano() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rand_suffix(n: int = 5) -> str:
    return "".join(random.choice(_NAME_CHARS) for _ in range(n))


@dataclass
class WatchEvent:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    gr: str
    namespace: str
    obj: Obj
    old: Obj | None


class Cluster:
    def __init__(self, key: str, version: str = "1.31") -> None:
        self.key = key
        parts = key.split("/")
        self.account = parts[0] if parts else ""
        self.region = parts[1] if len(parts) > 1 else "us-west-2"
        self.name = parts[2] if len(parts) > 2 else key
        self.version = version
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 0
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {}
        self.history: deque[WatchEvent] = deque(maxlen=HISTORY)
        self.logs: dict[str, list[list[str]]] = {}  # "{pod uid}/{container}" -> [[ts, line]]
        # per log key, how many lines were trimmed from its front (MAX_LOG_LINES): positions in a log
        # are absolute (trimmed + index), so a reader that goes on from one never stalls on a full log
        self.log_trimmed: dict[str, int] = {}
        self.sim: dict[str, dict[str, Any]] = {}  # controller scratch, keyed by object uid
        self.addons: set[str] = set()
        self.counters: dict[str, int] = {}
        self.closed = False
        self.field_validation: str | None = None  # the current request's fieldValidation (lock held)
        self.types: dict[tuple[str, str, str], ResourceType] = {}
        self._validators: dict[tuple[str, str, str], tuple[str, SchemaValidator | None]] = {}
        for rt in BUILTIN:
            self.types[(rt.group, rt.version, rt.plural)] = rt

    # ---------------------------------------------------------------- types

    def find_type(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.types.get((group, version, plural))

    def type_for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for rt in self.types.values():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def type_by_gr(self, gr: str) -> ResourceType | None:
        group, plural = gr.split("/", 1)
        for rt in self.types.values():
            if rt.group == group and rt.plural == plural:
                return rt
        return None

    def rebuild_crd_types(self) -> None:
        self.types = {(rt.group, rt.version, rt.plural): rt for rt in BUILTIN}
        for crd in self.objects.get(CRD_GR, {}).values():
            if crd["metadata"].get("deletionTimestamp"):
                continue
            for rt in types_from_crd(crd):
                self.types.setdefault((rt.group, rt.version, rt.plural), rt)

    def validator(self, rt: ResourceType) -> SchemaValidator | None:
        """The (cached) schema validator of a CRD version, or None when it has no schema."""
        if rt.crd is None:
            return None
        crd = self.objects.get(CRD_GR, {}).get(("", rt.crd))
        if crd is None:
            return None
        key = (rt.group, rt.version, rt.plural)
        cached = self._validators.get(key)
        if cached and cached[0] == crd["metadata"]["resourceVersion"]:
            return cached[1]
        v = None
        for ver in crd["spec"].get("versions") or []:
            if ver.get("name") == rt.version:
                s = (ver.get("schema") or {}).get("openAPIV3Schema")
                if s:
                    v = SchemaValidator(s)
        self._validators[key] = (crd["metadata"]["resourceVersion"], v)
        return v

    # ---------------------------------------------------------------- read

    def bucket(self, gr: str) -> dict[tuple[str, str], Obj]:
        return self.objects.setdefault(gr, {})

    def get(self, gr: str, namespace: str, name: str) -> Obj | None:
        return self.objects.get(gr, {}).get((namespace, name))

    def must_get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.get(rt.gr, namespace, name)
        if obj is None:
            raise not_found(rt.group, rt.plural, name)
        return obj

    def list(self, gr: str, namespace: str | None = None) -> list[Obj]:
        items = self.objects.get(gr, {})
        if namespace is None:
            return sorted(items.values(), key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return sorted((o for (ns, _n), o in items.items() if ns == namespace), key=lambda o: o["metadata"]["name"])

    def by_uid(self, uid: str) -> tuple[str, Obj] | None:
        for gr, items in self.objects.items():
            for o in items.values():
                if o["metadata"].get("uid") == uid:
                    return gr, o
        return None

    # ---------------------------------------------------------------- write

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _emit(self, etype: str, gr: str, obj: Obj, old: Obj | None) -> None:
        self.history.append(
            WatchEvent(
                int(obj["metadata"]["resourceVersion"]), etype, gr, obj["metadata"].get("namespace", ""), obj, old
            )
        )
        self.cond.notify_all()

    def create(
        self,
        rt: ResourceType,
        obj: Obj,
        namespace: str = "",
        *,
        keep_status: bool = False,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        obj = clone(obj)
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if rt.namespaced:
            ns = namespace or meta.get("namespace") or "default"
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            meta["namespace"] = ns
            nso = self.get("/namespaces", "", ns)
            if nso is None:
                raise ApiError(404, "NotFound", f'namespaces "{ns}" not found', {"name": ns, "kind": "namespaces"})
            if nso["metadata"].get("deletionTimestamp") and rt.gr != "/events":
                raise forbidden(
                    f'{rt.plural} "{meta.get("name", "")}" is forbidden: unable to create new '
                    f"content in namespace {ns} because it is being terminated"
                )
        else:
            meta.pop("namespace", None)
            ns = ""
        if not meta.get("name") and meta.get("generateName"):
            for _ in range(20):
                candidate = meta["generateName"] + rand_suffix()
                if self.get(rt.gr, ns, candidate) is None:
                    meta["name"] = candidate
                    break
        name = meta.get("name")
        if not name:
            raise ApiError(
                422 if meta.get("generateName") is None else 500,
                "Invalid",
                f'{rt.kind} "" is invalid: metadata.name: Required value: name or generateName is required',
                {
                    "kind": rt.kind,
                    "group": rt.group,
                    "causes": [
                        {
                            "reason": "FieldValueRequired",
                            "message": "Required value: name or generateName is required",
                            "field": "metadata.name",
                        }
                    ],
                },
            )
        if self.get(rt.gr, ns, name) is not None:
            raise already_exists(rt.group, rt.plural, name)
        if rt.has_status and not keep_status:
            obj.pop("status", None)
            if not rt.crd:
                obj["status"] = {}  # built-ins always carry a (possibly empty) status
        for k in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"):
            meta.pop(k, None)
        meta["uid"] = str(uuid.uuid4())
        admission.admit(self, rt, obj, None)
        if dry_run:
            return obj
        meta["creationTimestamp"] = now_iso()
        if "spec" in obj or rt.crd:
            meta["generation"] = 1
        if field_manager:
            meta["managedFields"] = [_managed(field_manager, "Update" if field_manager != "apply" else "Apply", rt)]
        meta["resourceVersion"] = str(self._next_rv())
        self.bucket(rt.gr)[(ns, name)] = obj
        if rt.gr == CRD_GR:
            self._crd_changed(obj)
            obj = self.bucket(rt.gr)[(ns, name)]
        self._emit("ADDED", rt.gr, obj, None)
        admission.after_create(self, rt, obj)
        return obj

    def replace(
        self,
        rt: ResourceType,
        obj: Obj,
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
        check_rv: bool = True,
        dry_run: bool = False,
    ) -> Obj:
        """PUT semantics. subresource="status" changes only status; None ignores status changes
        when the type has a status subresource. Controllers pass subresource="all" to write both."""
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace", "") if rt.namespaced else ""
        name = meta.get("name", "")
        old = self.must_get(rt, ns, name)
        want_rv = meta.get("resourceVersion")
        if check_rv and want_rv and want_rv != old["metadata"]["resourceVersion"]:
            raise conflict(rt.group, rt.plural, name)
        if subresource == "status":
            new = clone(old)
            if "status" in obj:
                new["status"] = clone(obj["status"])
            else:
                new.pop("status", None)
        else:
            new = clone(obj)
            new["apiVersion"] = rt.api_version
            new["kind"] = rt.kind
            nm = new.setdefault("metadata", {})
            for k in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "namespace",
            ):
                if k in old["metadata"]:
                    nm[k] = old["metadata"][k]
                else:
                    nm.pop(k, None)
            if "managedFields" not in nm and "managedFields" in old["metadata"]:
                nm["managedFields"] = old["metadata"]["managedFields"]
            if rt.has_status and subresource != "all":
                if "status" in old:
                    new["status"] = clone(old["status"])
                else:
                    new.pop("status", None)
            admission.admit(self, rt, new, old)
        nm = new["metadata"]
        nm["resourceVersion"] = old["metadata"]["resourceVersion"]
        if field_manager:
            nm["managedFields"] = _merge_managed(nm.get("managedFields"), field_manager, rt)
        if _same(new, old):
            return old
        if _spec_of(new) != _spec_of(old) and "generation" in nm:
            nm["generation"] = int(nm["generation"]) + 1
        if dry_run:
            return new
        nm["resourceVersion"] = str(self._next_rv())
        # an object being deleted disappears once its last finalizer is removed
        if nm.get("deletionTimestamp") and not nm.get("finalizers"):
            self.bucket(rt.gr)[(ns, name)] = new
            self._remove(rt.gr, new)
            self._cascade(nm["uid"], ns)  # the garbage collector then deletes its dependents
            return new
        self.bucket(rt.gr)[(ns, name)] = new
        if rt.gr == CRD_GR:
            self._crd_changed(new)
            new = self.bucket(rt.gr)[(ns, name)]
        self._emit("MODIFIED", rt.gr, new, old)
        return new

    def put_status(self, gr: str, obj: Obj, status: dict[str, Any]) -> Obj:
        """Controller helper: write status only when it changed (no event otherwise)."""
        if obj.get("status") == status:
            return obj
        rt = self.type_by_gr(gr)
        assert rt is not None
        new = dict(obj)
        new["status"] = status
        new["metadata"] = dict(obj["metadata"])
        new["metadata"].pop("resourceVersion", None)
        return self.replace(rt, new, subresource="status", check_rv=False)

    def put(self, gr: str, obj: Obj) -> Obj:
        """Controller helper: write a whole object (spec, metadata and status)."""
        rt = self.type_by_gr(gr)
        assert rt is not None
        obj = dict(obj)
        obj["metadata"] = dict(obj["metadata"])
        obj["metadata"].pop("resourceVersion", None)
        return self.replace(rt, obj, subresource="all", check_rv=False)

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        *,
        propagation: str = "Background",
        precondition_uid: str | None = None,
        precondition_rv: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        obj = self.must_get(rt, namespace, name)
        if precondition_uid and precondition_uid != obj["metadata"]["uid"]:
            raise conflict(rt.group, rt.plural, name)
        if precondition_rv and precondition_rv != obj["metadata"]["resourceVersion"]:
            raise conflict(rt.group, rt.plural, name)
        if dry_run:
            return obj
        if rt.gr == "/namespaces":
            if name in ("default", "kube-system", "kube-public"):
                raise forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted')
            if obj["metadata"].get("deletionTimestamp"):
                return obj
            new = clone(obj)
            new["metadata"]["deletionTimestamp"] = now_iso()
            new.setdefault("status", {})["phase"] = "Terminating"
            return self._write_modified(rt.gr, new, obj)
        if obj["metadata"].get("finalizers"):
            if obj["metadata"].get("deletionTimestamp"):
                return obj
            new = clone(obj)
            new["metadata"]["deletionTimestamp"] = now_iso()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return self._write_modified(rt.gr, new, obj)
        uid = obj["metadata"]["uid"]
        if rt.gr == "/pods":
            admission.on_pod_deleted(self, obj)  # the kubelet's Killing events
        if propagation == "Orphan":
            self._orphan(uid, namespace)
        else:
            self._cascade(uid, namespace)
        cur = self.get(rt.gr, namespace, name)
        if cur is not None:
            self._remove(rt.gr, cur)
        return obj

    def _write_modified(self, gr: str, new: Obj, old: Obj) -> Obj:
        new["metadata"]["resourceVersion"] = str(self._next_rv())
        self.bucket(gr)[(new["metadata"].get("namespace", ""), new["metadata"]["name"])] = new
        self._emit("MODIFIED", gr, new, old)
        return new

    def _remove(self, gr: str, obj: Obj) -> None:
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        if self.bucket(gr).pop(key, None) is None:
            return
        gone = copy.copy(obj)
        gone["metadata"] = dict(meta, resourceVersion=str(self._next_rv()))
        self.sim.pop(meta.get("uid", ""), None)
        if gr == "/pods":
            uid = meta.get("uid", "")
            for k in [k for k in self.logs if k.startswith(uid + "/")]:
                del self.logs[k]
                self.log_trimmed.pop(k, None)
        if gr == CRD_GR:
            self._crd_removed(obj)
        self._emit("DELETED", gr, gone, obj)

    def _dependents(self, uid: str, namespace: str) -> list[tuple[str, Obj]]:
        out = []
        for gr, items in self.objects.items():
            for (ns, _n), o in items.items():
                if namespace and ns not in (namespace, ""):
                    continue
                for ref in o["metadata"].get("ownerReferences") or []:
                    if ref.get("uid") == uid:
                        out.append((gr, o))
                        break
        return out

    def _cascade(self, uid: str, namespace: str) -> None:
        for gr, dep in self._dependents(uid, namespace):
            rt = self.type_by_gr(gr)
            if rt is None or self.get(gr, dep["metadata"].get("namespace", ""), dep["metadata"]["name"]) is None:
                continue
            self.delete(rt, dep["metadata"].get("namespace", ""), dep["metadata"]["name"])

    def _orphan(self, uid: str, namespace: str) -> None:
        for gr, dep in self._dependents(uid, namespace):
            new = clone(dep)
            new["metadata"]["ownerReferences"] = [r for r in new["metadata"]["ownerReferences"] if r.get("uid") != uid]
            if not new["metadata"]["ownerReferences"]:
                del new["metadata"]["ownerReferences"]
            self._write_modified(gr, new, dep)

    def finish_namespace(self, name: str) -> None:
        """Namespace controller: remove everything in a Terminating namespace, then the namespace."""
        for gr in list(self.objects):
            for (ns, _n), o in list(self.objects[gr].items()):
                if ns == name:
                    self._remove(gr, o)
        ns_obj = self.get("/namespaces", "", name)
        if ns_obj is not None:
            self._remove("/namespaces", ns_obj)

    # ---------------------------------------------------------------- CRDs

    def _crd_changed(self, crd: Obj) -> None:
        self.rebuild_crd_types()
        if not (crd.get("status") or {}).get("acceptedNames"):
            # the apiextensions controller accepts the names and marks the CRD Established
            new = clone(crd)
            names = crd["spec"].get("names") or {}
            new["status"] = {
                "acceptedNames": names,
                "storedVersions": [v["name"] for v in crd["spec"].get("versions", []) if v.get("storage")],
                "conditions": [
                    {
                        "type": "NamesAccepted",
                        "status": "True",
                        "reason": "NoConflicts",
                        "message": "no conflicts found",
                        "lastTransitionTime": now_iso(),
                    },
                    {
                        "type": "Established",
                        "status": "True",
                        "reason": "InitialNamesAccepted",
                        "message": "the initial names have been accepted",
                        "lastTransitionTime": now_iso(),
                    },
                ],
            }
            new["metadata"]["resourceVersion"] = str(self._next_rv())
            self.bucket(CRD_GR)[("", crd["metadata"]["name"])] = new

    def _crd_removed(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        gr = f"{spec.get('group', '')}/{(spec.get('names') or {}).get('plural', '')}"
        for o in list(self.objects.get(gr, {}).values()):
            self._remove(gr, o)
        self.rebuild_crd_types()

    # ---------------------------------------------------------------- logs & events

    def append_log(self, pod: Obj, container: str, line: str, ts: str | None = None) -> None:
        key = f"{pod['metadata']['uid']}/{container}"
        lines = self.logs.setdefault(key, [])
        lines.append([ts or now_iso_nano(), line])
        if len(lines) > MAX_LOG_LINES:
            self.log_trimmed[key] = self.log_trimmed.get(key, 0) + len(lines) - MAX_LOG_LINES
            del lines[: len(lines) - MAX_LOG_LINES]
        self.cond.notify_all()

    def log_end(self, key: str) -> int:
        """The absolute position after the last line of a log (what a reader that read it all passed)."""
        return self.log_trimmed.get(key, 0) + len(self.logs.get(key) or [])

    def log_after(self, key: str, pos: int) -> tuple[list[list[str]], int]:
        """The lines of a log from absolute position ``pos`` (those trimmed meanwhile are gone) and the
        position after them."""
        lines = self.logs.get(key) or []
        start = max(pos - self.log_trimmed.get(key, 0), 0)
        return lines[start:], self.log_trimmed.get(key, 0) + len(lines)

    def record_event(
        self, obj: Obj, reason: str, message: str, etype: str = "Normal", component: str = "kubelet"
    ) -> None:
        meta = obj["metadata"]
        ns = meta.get("namespace") or "default"
        if self.get("/namespaces", "", ns) is None:
            return
        idx = self.sim.setdefault("_events", {})
        dedupe = f"{meta.get('uid')}|{reason}|{message}"
        ts = now_iso()
        existing = idx.get(dedupe)
        if existing:
            ev = self.get("/events", ns, existing)
            if ev is not None:
                new = clone(ev)
                new["count"] = int(ev.get("count", 1)) + 1
                new["lastTimestamp"] = ts
                self.put("/events", new)
                return
        name = f"{meta['name']}.{uuid.uuid4().hex[:16]}"
        rt = self.type_by_gr("/events")
        assert rt is not None
        api_version = obj.get("apiVersion", "v1")
        self.create(
            rt,
            {
                "metadata": {"name": name, "namespace": ns},
                "involvedObject": {
                    "kind": obj.get("kind"),
                    "namespace": meta.get("namespace"),
                    "name": meta["name"],
                    "uid": meta.get("uid"),
                    "apiVersion": api_version,
                    "resourceVersion": meta.get("resourceVersion"),
                },
                "reason": reason,
                "message": message,
                "type": etype,
                "count": 1,
                "source": {"component": component},
                "firstTimestamp": ts,
                "lastTimestamp": ts,
                "eventTime": None,
                "reportingComponent": component,
                "reportingInstance": "",
            },
            ns,
        )
        idx[dedupe] = name
        events = self.objects.get("/events", {})
        if len(events) > MAX_EVENTS:
            oldest = sorted(events.values(), key=lambda e: int(e["metadata"]["resourceVersion"]))
            for e in oldest[: len(events) - MAX_EVENTS]:
                self._remove("/events", e)
            live = {e["metadata"]["name"] for e in events.values()}
            for k in [k for k, v in idx.items() if v not in live]:
                del idx[k]

    def counter(self, name: str) -> int:
        self.counters[name] = self.counters.get(name, 0) + 1
        return self.counters[name]

    # ---------------------------------------------------------------- persistence

    def snapshot(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "version": self.version,
            "rv": self.rv,
            "objects": {gr: list(items.values()) for gr, items in self.objects.items()},
            "logs": self.logs,
            "log_trimmed": self.log_trimmed,
            "sim": self.sim,
            "addons": sorted(self.addons),
            "counters": self.counters,
            "saved_at": time.time(),
        }

    @classmethod
    def restore(cls, data: dict[str, Any]) -> Cluster:
        c = cls(data["key"], data.get("version", "1.31"))
        c.rv = int(data.get("rv", 0))
        for gr, items in data.get("objects", {}).items():
            c.objects[gr] = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in items}
        c.logs = data.get("logs", {})
        c.log_trimmed = data.get("log_trimmed", {})
        c.sim = data.get("sim", {})
        c.addons = set(data.get("addons", []))
        c.counters = data.get("counters", {})
        c.rebuild_crd_types()
        return c


def _managed(manager: str, operation: str, rt: ResourceType) -> dict[str, Any]:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": rt.api_version,
        "time": now_iso(),
        "fieldsType": "FieldsV1",
        "fieldsV1": {},
    }


def _merge_managed(existing: Any, manager: str, rt: ResourceType, operation: str = "Update") -> list[Any]:
    out = [m for m in (existing or []) if not (m.get("manager") == manager and m.get("operation") == operation)]
    out.append(_managed(manager, operation, rt))
    return out


def _spec_of(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _same(a: Obj, b: Obj) -> bool:
    def strip(o: Obj) -> str:
        m = {k: v for k, v in o.get("metadata", {}).items() if k not in ("resourceVersion", "managedFields")}
        return json.dumps(dict(o, metadata=m), sort_keys=True, default=str)

    return strip(a) == strip(b)
