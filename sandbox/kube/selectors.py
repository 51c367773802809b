"""Label and field selectors, parsed as kube-apiserver parses them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .errors import bad_request

Obj = dict[str, Any]
Pred = Callable[[Obj], bool]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")


def _split_top(expr: str) -> list[str]:
    """Split on commas that are not inside parentheses (`a in (x,y),b!=c`)."""
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(expr: str | None) -> Pred:
    if not expr:
        return lambda _o: True
    preds: list[Callable[[dict[str, str]], bool]] = []
    for term in _split_top(expr):
        m = re.match(r"^([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)$", term)
        if m:
            key, op, val = m.groups()
            if op == "!=":
                preds.append(lambda lb, k=key, v=val: lb.get(k) != v)
            else:
                preds.append(lambda lb, k=key, v=val: lb.get(k) == v)
            continue
        m = _SET_RE.match(term)
        if not m:
            raise bad_request(f"unable to parse requirement: {term!r}")
        neg, key, op, vals = m.groups()
        if op:
            if neg:
                raise bad_request(f"unable to parse requirement: {term!r}")
            values = {v.strip() for v in vals.split(",") if v.strip()}
            if op == "in":
                preds.append(lambda lb, k=key, vs=values: lb.get(k) in vs)
            else:
                preds.append(lambda lb, k=key, vs=values: lb.get(k) not in vs)
        elif neg:
            preds.append(lambda lb, k=key: k not in lb)
        else:
            preds.append(lambda lb, k=key: k in lb)

    def match(obj: Obj) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(p(labels) for p in preds)

    return match


def match_label_selector_obj(selector: dict[str, Any] | None, labels: dict[str, str] | None) -> bool:
    """A metav1.LabelSelector ({matchLabels, matchExpressions}) against a label map."""
    if selector is None:
        return False
    labels = labels or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and labels.get(k) in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def _field_value(obj: Obj, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(expr: str | None) -> Pred:
    if not expr:
        return lambda _o: True
    preds: list[Pred] = []
    for term in _split_top(expr):
        m = re.match(r"^([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*)$", term)
        if not m:
            raise bad_request(f"invalid selector: '{term}'; can't understand '{term}'")
        path, op, val = m.groups()
        if op == "!=":
            preds.append(lambda o, p=path, v=val: _field_value(o, p) != v)
        else:
            preds.append(lambda o, p=path, v=val: _field_value(o, p) == v)
    return lambda o: all(p(o) for p in preds)
