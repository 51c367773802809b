"""The PATCH flavours kube-apiserver accepts: JSON merge, JSON patch (RFC 6902), strategic merge.

Strategic merge is reduced to what clients actually send: lists of named things (containers,
volumes, env, ports, ...) merge by their key, `$patch: delete|replace` directives and
`$setElementOrder/…` / `$retainKeys` are honoured or dropped; every other list is replaced.
"""

from __future__ import annotations

from typing import Any

from .errors import ApiError, bad_request
from .util import clone

# field name -> merge key (the patchMergeKey of the Kubernetes Go types).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "resourceClaims": "name",
    "taints": "key",
    "addresses": "type",
}
# lists of scalars with merge semantics
PRIMITIVE_MERGE = {"finalizers"}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: dicts merge recursively, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = clone(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


def _ptr(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for p in parts:
        if isinstance(cur, list):
            try:
                cur = cur[int(p)]
            except (ValueError, IndexError):
                raise ApiError(422, "Invalid", f"jsonpatch: index {p} out of range")
        elif isinstance(cur, dict):
            if p not in cur:
                raise ApiError(422, "Invalid", f"jsonpatch: path element {p!r} does not exist")
            cur = cur[p]
        else:
            raise ApiError(422, "Invalid", f"jsonpatch: cannot traverse into {p!r}")
    return cur


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            idx = int(last)
            if idx > len(parent):
                raise ApiError(422, "Invalid", "jsonpatch add: index out of range")
            parent.insert(idx, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise ApiError(422, "Invalid", "jsonpatch add: parent is not a container")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        try:
            return parent.pop(int(last))
        except (ValueError, IndexError):
            raise ApiError(422, "Invalid", "jsonpatch remove: index out of range")
    if not isinstance(parent, dict) or last not in parent:
        raise ApiError(
            422, "Invalid", f"jsonpatch remove operation does not apply: doc is missing path: /{'/'.join(parts)}"
        )
    return parent.pop(last)


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = clone(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation {op!r}")
        kind, parts = op["op"], _ptr(op["path"])
        if kind == "add":
            doc = _add(doc, parts, clone(op.get("value")))
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "replace":
            _walk(doc, parts)  # must exist
            if parts:
                _remove(doc, parts)
            doc = _add(doc, parts, clone(op.get("value")))
        elif kind in ("move", "copy"):
            src = _ptr(op.get("from", ""))
            val = clone(_walk(doc, src))
            if kind == "move":
                _remove(doc, src)
            doc = _add(doc, parts, val)
        elif kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise ApiError(422, "Invalid", f"jsonpatch test operation failed at {op['path']}")
        else:
            raise bad_request(f"unknown json patch op {kind!r}")
    return doc


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        # container ports merge on containerPort, service ports on port
        sample = next((i for i in items if isinstance(i, dict)), {})
        return "containerPort" if "containerPort" in sample else "port"
    return MERGE_KEYS.get(field)


def strategic_merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return clone(patch)
    if patch.get("$patch") == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = clone(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if (
            k.startswith("$setElementOrder/")
            or k.startswith("$deleteFromPrimitiveList/")
            or k in ("$retainKeys", "$patch")
        ):
            if k.startswith("$deleteFromPrimitiveList/"):
                fld = k.split("/", 1)[1]
                if isinstance(result.get(fld), list):
                    result[fld] = [x for x in result[fld] if x not in v]
            continue
        if v is None:
            result.pop(k, None)
        elif isinstance(v, list):
            result[k] = _merge_list(k, result.get(k), v)
        elif isinstance(v, dict):
            merged = strategic_merge(result.get(k), v)
            if merged is None:
                result.pop(k, None)
            else:
                result[k] = merged
        else:
            result[k] = clone(v)
    if isinstance(retain, list):
        result = {k: val for k, val in result.items() if k in retain}
    return result


def _merge_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    if field in PRIMITIVE_MERGE and isinstance(current, list):
        out = list(current)
        out.extend(x for x in patch if x not in out)
        return out
    key = _merge_key(field, patch)
    if key is None or not isinstance(current, list) or not all(isinstance(i, dict) for i in patch):
        return [x for x in clone(patch) if not (isinstance(x, dict) and x.get("$patch"))]
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [clone(i) for i in patch if i.get("$patch") != "replace"]
    out = clone(current)
    for item in patch:
        kv = item.get(key)
        idx = next((n for n, c in enumerate(out) if isinstance(c, dict) and c.get(key) == kv), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(clone(item))
        else:
            out[idx] = strategic_merge(out[idx], item)
    return out
