"""A PromQL subset evaluated over the sandbox TSDB (promql-parser gives the AST and the real parse
errors).

Supported: selectors with =, !=, =~, !~ and `offset`; range selectors; `rate`, `irate`,
`increase`, `delta`, `*_over_time` (avg, sum, min, max, count, last), `scalar`, `vector`, `abs`,
`ceil`, `floor`, `round`, `clamp_min`, `clamp_max`, `time`, `absent`, `histogram_quantile`;
`sum`/`avg`/`max`/`min`/`count` with `by`/`without`; arithmetic (+ - * / % ^) and comparisons
(with `bool`) between scalars and vectors, one-to-one vector matching with `on`/`ignoring`;
`and`/`or`/`unless`. Anything else is refused with a clear error (never a wrong answer).

Time: samples carry wall-clock timestamps; durations written in a query (ranges, offsets, the
5m lookback) are simulated time and are divided by the sandbox speedup, like every duration in
the sandbox. `rate`/`irate` are per real second (the traffic is real), so "2 requests per second"
means what it says.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import promql_parser as pp

from .tsdb import TSDB, Labels, is_stale

LOOKBACK = 300.0  # seconds of simulated time
Vector = list[tuple[dict[str, str], float]]
Matrix = list[tuple[dict[str, str], list[tuple[float, float]]]]


class QueryError(Exception):
    """bad_data: the query cannot be evaluated (the API answers 400)."""


def parse(query: str) -> Any:
    try:
        return pp.parse(query)
    except ValueError as e:
        raise QueryError(f"1:1: parse error: {e}") from None


class Evaluator:
    """Evaluate an AST at one instant."""

    def __init__(self, db: TSDB, speedup: float) -> None:
        self.db = db
        self.speedup = max(float(speedup), 1e-9)
        self._snapshot: list[tuple[Labels, list[tuple[float, float]]]] | None = None

    def real(self, seconds: float) -> float:
        return seconds / self.speedup

    def instant(self, query: str, t: float) -> tuple[str, Any]:
        """('vector', [...]) or ('scalar', float) or ('string', str)."""
        self._snapshot = self.db.snapshot()
        value = self.eval(parse(query), t)
        if isinstance(value, float):
            return "scalar", value
        if isinstance(value, str):
            return "string", value
        if value and isinstance(value[0][1], list):
            return "matrix", value
        return "vector", value

    # ------------------------------------------------------------ nodes

    def eval(self, node: Any, t: float) -> Any:
        kind = type(node).__name__
        if kind == "NumberLiteral":
            return float(node.val)
        if kind == "StringLiteral":
            return str(node.val)
        if kind == "ParenExpr":
            return self.eval(node.expr, t)
        if kind == "UnaryExpr":
            v = self.eval(node.expr, t)
            return -v if isinstance(v, float) else [(_drop_name(m), -x) for m, x in v]
        if kind == "VectorSelector":
            return self.select(node, t)
        if kind == "MatrixSelector":
            return self.range_select(node, t)
        if kind == "Call":
            return self.call(node, t)
        if kind == "AggregateExpr":
            return self.aggregate(node, t)
        if kind == "BinaryExpr":
            return self.binary(node, t)
        raise QueryError(f"{kind} is not supported by the sandbox's Prometheus")

    def _series(self, vs: Any) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        preds: list[Callable[[dict[str, str]], bool]] = []
        if vs.name:
            preds.append(lambda m, n=vs.name: m.get("__name__") == n)
        for mt in vs.matchers.matchers:
            preds.append(_matcher(mt))
        if vs.matchers.or_matchers:
            raise QueryError("'or' label matchers are not supported by the sandbox's Prometheus")
        out = []
        for labels, samples in self._snapshot or []:
            m = dict(labels)
            if all(p(m) for p in preds):
                out.append((m, samples))
        return out

    def select(self, vs: Any, t: float) -> Vector:
        t = t - self.real(_secs(vs.offset))
        lookback = self.real(LOOKBACK)
        out: Vector = []
        for m, samples in self._series(vs):
            last = None
            for ts, v in reversed(samples):
                if ts <= t:
                    last = (ts, v)
                    break
            if last is None or t - last[0] > lookback or is_stale(last[1]):
                continue
            out.append((m, last[1]))
        return out

    def range_select(self, ms: Any, t: float) -> Matrix:
        vs = ms.vector_selector
        end = t - self.real(_secs(vs.offset))
        start = end - self.real(ms.range.total_seconds())
        out: Matrix = []
        for m, samples in self._series(vs):
            pts = [(ts, v) for ts, v in samples if start < ts <= end and not is_stale(v)]
            if pts:
                out.append((m, pts))
        return out

    # ------------------------------------------------------------ functions

    def call(self, node: Any, t: float) -> Any:
        name = node.func.name
        args = node.args
        if name in ("rate", "irate", "increase", "delta"):
            ms = args[0]
            if type(ms).__name__ != "MatrixSelector":
                raise QueryError(f'expected type range vector in call to function "{name}", got instant vector')
            window = self.real(ms.range.total_seconds())
            out: Vector = []
            for m, pts in self.range_select(ms, t):
                v = _rate(name, pts, t - self.real(_secs(ms.vector_selector.offset)), window)
                if v is not None:
                    out.append((_drop_name(m), v))
            return out
        if name.endswith("_over_time"):
            agg = {
                "avg_over_time": lambda xs: sum(xs) / len(xs),
                "sum_over_time": sum,
                "min_over_time": min,
                "max_over_time": max,
                "count_over_time": lambda xs: float(len(xs)),
                "last_over_time": lambda xs: xs[-1],
            }.get(name)
            if agg is None:
                raise QueryError(f"function {name} is not supported by the sandbox's Prometheus")
            return [
                (m if name == "last_over_time" else _drop_name(m), float(agg([v for _, v in pts])))
                for m, pts in self.range_select(args[0], t)
            ]
        if name == "scalar":
            v = self.eval(args[0], t)
            return v[0][1] if isinstance(v, list) and len(v) == 1 else math.nan
        if name == "vector":
            return [({}, float(self.eval(args[0], t)))]
        if name == "time":
            return float(t)
        if name in ("abs", "ceil", "floor", "round", "sqrt", "exp", "ln"):
            fn = {
                "abs": abs,
                "ceil": math.ceil,
                "floor": math.floor,
                "round": round,
                "sqrt": math.sqrt,
                "exp": math.exp,
                "ln": math.log,
            }[name]
            return [(_drop_name(m), float(fn(v))) for m, v in self.eval(args[0], t)]
        if name in ("clamp_min", "clamp_max"):
            bound = float(self.eval(args[1], t))
            f = max if name == "clamp_min" else min
            return [(_drop_name(m), f(v, bound)) for m, v in self.eval(args[0], t)]
        if name == "absent":
            return [] if self.eval(args[0], t) else [({}, 1.0)]
        if name == "histogram_quantile":
            return _quantile(float(self.eval(args[0], t)), self.eval(args[1], t))
        raise QueryError(f"function {name} is not supported by the sandbox's Prometheus")

    def aggregate(self, node: Any, t: float) -> Vector:
        op = str(node.op)
        v = self.eval(node.expr, t)
        if not isinstance(v, list):
            raise QueryError("expected type instant vector in aggregation expression, got scalar")
        mod = node.modifier
        by = mod is not None and "By" in str(mod.type)
        names = set(mod.labels) if mod is not None else set()
        groups: dict[tuple[tuple[str, str], ...], list[float]] = {}
        for m, x in v:
            if mod is None:
                key: tuple[tuple[str, str], ...] = ()
            elif by:
                key = tuple(sorted((k, m[k]) for k in names if k in m))
            else:
                key = tuple(sorted((k, val) for k, val in m.items() if k not in names and k != "__name__"))
            groups.setdefault(key, []).append(x)
        fns: dict[str, Callable[[list[float]], float]] = {
            "sum": sum,
            "avg": lambda xs: sum(xs) / len(xs),
            "max": max,
            "min": min,
            "count": lambda xs: float(len(xs)),
        }
        if op not in fns:
            raise QueryError(f"aggregation {op} is not supported by the sandbox's Prometheus")
        return [(dict(k), float(fns[op](xs))) for k, xs in groups.items()]

    def binary(self, node: Any, t: float) -> Any:
        op = str(node.op)
        lhs, rhs = self.eval(node.lhs, t), self.eval(node.rhs, t)
        mod = node.modifier
        return_bool = bool(mod and mod.return_bool)
        if op in ("and", "or", "unless"):
            return _set_op(op, lhs, rhs, mod)
        fn = _OPS.get(op)
        if fn is None:
            raise QueryError(f"operator {op} is not supported by the sandbox's Prometheus")
        comparison = op in ("==", "!=", ">", "<", ">=", "<=")
        if isinstance(lhs, float) and isinstance(rhs, float):
            r = fn(lhs, rhs)
            return float(r) if not comparison else (1.0 if r else 0.0)
        if isinstance(rhs, float):
            return _vs(lhs, lambda x: fn(x, rhs), comparison, return_bool)
        if isinstance(lhs, float):
            return _vs(rhs, lambda x: fn(lhs, x), comparison, return_bool, left_value=lhs)
        if mod is not None and mod.card is not None and "OneToOne" not in str(mod.card):
            raise QueryError("group_left/group_right are not supported by the sandbox's Prometheus")
        matching = mod.matching if mod is not None else None
        index: dict[tuple[tuple[str, str], ...], tuple[dict[str, str], float]] = {}
        for m, x in rhs:
            k = _match_key(m, matching)
            if k in index:
                raise QueryError("found duplicate series for the match group on the right hand-side of the operation")
            index[k] = (m, x)
        out: Vector = []
        for m, x in lhs:
            hit = index.get(_match_key(m, matching))
            if hit is None:
                continue
            r = fn(x, hit[1])
            if comparison:
                if return_bool:
                    out.append((_result_labels(m, matching), 1.0 if r else 0.0))
                elif r:
                    out.append((m, x))
            else:
                out.append((_result_labels(m, matching), float(r)))
        return out


def _div(a: float, b: float) -> float:
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    return a / b


_OPS: dict[str, Callable[[float, float], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _div,
    "%": lambda a, b: math.fmod(a, b) if b else math.nan,
    "^": lambda a, b: a**b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
}


def _vs(v: Any, f: Callable[[float], Any], comparison: bool, return_bool: bool, left_value: float | None = None):
    if not isinstance(v, list):
        raise QueryError("expected an instant vector")
    out: Vector = []
    for m, x in v:
        r = f(x)
        if comparison:
            if return_bool:
                out.append((_drop_name(m), 1.0 if r else 0.0))
            elif r:
                out.append((m, x if left_value is None else left_value))
        else:
            out.append((_drop_name(m), float(r)))
    return out


def _set_op(op: str, lhs: Any, rhs: Any, mod: Any) -> Vector:
    if not isinstance(lhs, list) or not isinstance(rhs, list):
        raise QueryError(f'set operator "{op}" not allowed in binary scalar expression')
    matching = mod.matching if mod is not None else None
    right = {_match_key(m, matching) for m, _ in rhs}
    if op == "and":
        return [(m, x) for m, x in lhs if _match_key(m, matching) in right]
    if op == "unless":
        return [(m, x) for m, x in lhs if _match_key(m, matching) not in right]
    left = {_match_key(m, matching) for m, _ in lhs}
    return list(lhs) + [(m, x) for m, x in rhs if _match_key(m, matching) not in left]


def _match_key(m: dict[str, str], matching: Any) -> tuple[tuple[str, str], ...]:
    if matching is None:
        return tuple(sorted((k, v) for k, v in m.items() if k != "__name__"))
    names = set(matching.labels)
    if "Include" in str(matching.type):
        return tuple(sorted((k, m.get(k, "")) for k in names))
    return tuple(sorted((k, v) for k, v in m.items() if k not in names and k != "__name__"))


def _result_labels(m: dict[str, str], matching: Any) -> dict[str, str]:
    if matching is not None and "Include" in str(matching.type):
        return {k: m[k] for k in matching.labels if k in m}
    return _drop_name(m)


def _drop_name(m: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in m.items() if k != "__name__"}


def _secs(td: Any) -> float:
    if td is None:
        return 0.0
    return float(td.total_seconds()) if hasattr(td, "total_seconds") else float(td)


def _matcher(mt: Any) -> Callable[[dict[str, str]], bool]:
    op = str(mt.op)
    name, value = mt.name, mt.value
    if op.endswith("NotEqual"):
        return lambda m: m.get(name, "") != value
    if op.endswith("Equal"):
        return lambda m: m.get(name, "") == value
    rx = re.compile(f"^(?:{value})$")
    if op.endswith("NotRe"):
        return lambda m: not rx.match(m.get(name, ""))
    return lambda m: bool(rx.match(m.get(name, "")))


def _rate(fn: str, pts: list[tuple[float, float]], end: float, window: float) -> float | None:
    """Prometheus's extrapolated rate/increase (counter resets handled), and irate."""
    if len(pts) < 2:
        return None
    if fn == "irate":
        (t1, v1), (t2, v2) = pts[-2], pts[-1]
        d = v2 - v1 if v2 >= v1 else v2
        return d / (t2 - t1) if t2 > t1 else None
    counter = fn != "delta"
    delta = pts[-1][1] - pts[0][1]
    if counter:
        for (_, a), (_, b) in zip(pts, pts[1:], strict=False):
            if b < a:
                delta += a
    start = end - window
    sampled = pts[-1][0] - pts[0][0]
    avg_step = sampled / (len(pts) - 1)
    to_start = pts[0][0] - start
    to_end = end - pts[-1][0]
    if counter and delta > 0 and pts[0][1] >= 0:
        to_zero = sampled * (pts[0][1] / delta)
        to_start = min(to_start, to_zero)
    threshold = avg_step * 1.1
    extrap = sampled
    extrap += to_start if to_start < threshold else avg_step / 2
    extrap += to_end if to_end < threshold else avg_step / 2
    result = delta * (extrap / sampled) if sampled > 0 else 0.0
    if fn == "rate":
        return result / window if window > 0 else None
    return result


def _quantile(q: float, v: Any) -> Vector:
    groups: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
    for m, x in v:
        if "le" not in m:
            continue
        key = tuple(sorted((k, val) for k, val in m.items() if k not in ("le", "__name__")))
        groups.setdefault(key, []).append((float(m["le"]), x))
    out: Vector = []
    for key, buckets in groups.items():
        buckets.sort()
        total = buckets[-1][1]
        if total <= 0:
            out.append((dict(key), math.nan))
            continue
        rank = q * total
        prev_le, prev_c = 0.0, 0.0
        value = buckets[-1][0]
        for le, c in buckets:
            if c >= rank:
                value = (
                    prev_le if math.isinf(le) else prev_le + (le - prev_le) * ((rank - prev_c) / max(c - prev_c, 1e-12))
                )
                break
            prev_le, prev_c = le, c
        out.append((dict(key), value))
    return out
