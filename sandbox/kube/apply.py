"""Server-side apply, reduced: the applied configuration is merged in (strategic for built-ins,
JSON merge for custom objects), and fields this field manager applied last time but no longer
applies are removed, which is the part of SSA a caller notices. Ownership conflicts between
managers are not modelled (every apply behaves as `force=true`)."""

from __future__ import annotations

from typing import Any

from .patch import _merge_key

Obj = dict[str, Any]
_SKIP_META = {"name", "namespace", "resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"}


def remove_unapplied(target: Any, last: Any, new: Any, strategic: bool, field: str = "") -> None:
    """Delete from `target` what `last` applied and `new` no longer does (in place)."""
    if isinstance(target, dict) and isinstance(last, dict):
        new = new if isinstance(new, dict) else {}
        for k, lv in last.items():
            if field == "metadata" and k in _SKIP_META:
                continue
            if k not in new:
                target.pop(k, None)
            elif k in target:
                remove_unapplied(target[k], lv, new[k], strategic, k)
    elif strategic and isinstance(target, list) and isinstance(last, list) and isinstance(new, list):
        key = _merge_key(field, [x for x in last if isinstance(x, dict)])
        if key is None or not all(isinstance(x, dict) for x in last + new):
            return
        new_by = {x.get(key): x for x in new}
        for lv in last:
            kv = lv.get(key)
            idx = next((i for i, t in enumerate(target) if isinstance(t, dict) and t.get(key) == kv), None)
            if idx is None:
                continue
            if kv not in new_by:
                target.pop(idx)
            else:
                remove_unapplied(target[idx], lv, new_by[kv], strategic, field)


def fields_v1(applied: Any, strategic: bool, field: str = "") -> Obj:
    """A FieldsV1 set describing the applied configuration (f:field, k:{merge key} for keyed lists)."""
    import json

    out: Obj = {}
    if isinstance(applied, dict):
        for k, v in applied.items():
            if field == "" and k in ("apiVersion", "kind"):
                continue
            if field == "metadata" and k in _SKIP_META:
                continue
            out[f"f:{k}"] = fields_v1(v, strategic, k) if isinstance(v, dict | list) else {}
    elif isinstance(applied, list) and strategic:
        key = _merge_key(field, [x for x in applied if isinstance(x, dict)])
        if key and all(isinstance(x, dict) for x in applied):
            for item in applied:
                out["k:" + json.dumps({key: item.get(key)}, separators=(",", ":"))] = dict(
                    {".": {}}, **fields_v1(item, strategic, field)
                )
    return out
