"""The HyperPod training operator's log monitoring (`runPolicy.logMonitoringConfiguration`), evaluated
as the HyperPod elastic agent's LogEvaluator does, on every line the job's pods print:

- a line matches a rule when `re.match(logPattern, line)` (anchored at the start: patterns begin `.*`);
- no match within `expectedStartCutOffInSeconds` of the start, or no new match within
  `expectedRecurringFrequencyInSeconds` of the last one → HANGING;
- with `metricThreshold` + `operator` (gt, lt, eq, gteq, lteq) the first capture group is compared to
  int(metricThreshold) (the agent truncates it); `metricEvaluationDataPoints` consecutive comparisons
  that hold (default 1) → SLOW; a match that does not hold resets the count;
- a line matching `stopPattern` switches the rule off for the rest of the attempt.

A rule counts as healthy when any pod of the job prints its pattern (training loops print progress on
rank 0 only). Times are simulated seconds since all of the attempt's pods were running. A rule that
fires is a fault of reason `LogStateHanging_<name>` or `LogStateSlow_<name>`, as the agent reports it.
"""

from __future__ import annotations

import re
from typing import Any

from ..store import Cluster
from .base import Ctx, sim

Obj = dict[str, Any]
STATE = "log_monitoring"
_OPS = {
    "gt": lambda v, t: v > t,
    "lt": lambda v, t: v < t,
    "eq": lambda v, t: v == t,
    "gteq": lambda v, t: v >= t,
    "lteq": lambda v, t: v <= t,
}


def reset(c: Cluster, job: Obj) -> None:
    """A new attempt: rules start over; lines the pods printed before it are not looked at again."""
    s = sim(c, job)
    old = s.get(STATE) or {}
    s[STATE] = {"cursors": _ends(c, old.get("pods") or [])}


def _ends(c: Cluster, uids: list[str]) -> dict[str, int]:
    return {k: c.log_end(k) for k in c.logs if k.split("/", 1)[0] in uids and not k.endswith("/previous")}


def evaluate(c: Cluster, ctx: Ctx, job: Obj, pods: list[Obj], run_policy: Obj) -> tuple[str, str] | None:
    """(fault reason, message) when a rule fires this tick, else None."""
    rules = [r for r in run_policy.get("logMonitoringConfiguration") or [] if r.get("name") and r.get("logPattern")]
    if not rules or not pods or any((p.get("status") or {}).get("phase") != "Running" for p in pods):
        return None
    s = sim(c, job)
    state = s.setdefault(STATE, {"cursors": {}})
    state["pods"] = [p["metadata"]["uid"] for p in pods]
    if "start" not in state:
        state["start"] = ctx.now
        state["rules"] = {r["name"]: {"matched": None, "slow": 0, "active": True} for r in rules}
    elapsed = ctx.elapsed(state["start"])
    cursors = state["cursors"]
    compiled = []
    for r in rules:
        try:
            compiled.append(
                (r, re.compile(r["logPattern"]), re.compile(r["stopPattern"]) if r.get("stopPattern") else None)
            )
        except re.error:
            continue  # the agent fails to load a bad rule and runs without it
    for p in pods:
        uid = p["metadata"]["uid"]
        for ct in (p.get("spec") or {}).get("containers") or []:
            key = f"{uid}/{ct['name']}"
            lines, end = c.log_after(key, cursors.get(key, 0))
            for ts, line in lines:
                at = elapsed - ctx.elapsed(_wall(ts, ctx.now))  # when it was printed, in seconds since the start
                for rule, pattern, stop in compiled:
                    fired = _line(
                        state["rules"].setdefault(rule["name"], {"matched": None, "slow": 0, "active": True}),
                        rule,
                        pattern,
                        stop,
                        line,
                        at,
                    )
                    if fired:
                        return fired
            cursors[key] = end
    for rule, _, _ in compiled:
        rs = state["rules"].get(rule["name"]) or {}
        if not rs.get("active", True):
            continue
        cutoff = rule.get("expectedStartCutOffInSeconds")
        if cutoff is not None and rs.get("matched") is None and elapsed > float(cutoff):
            return _hanging(rule, f"no line matched {rule['logPattern']!r} within {cutoff} s of the start")
        every = rule.get("expectedRecurringFrequencyInSeconds")
        if every is not None and rs.get("matched") is not None and elapsed - float(rs["matched"]) > float(every):
            return _hanging(rule, f"no line matched {rule['logPattern']!r} for more than {every} s")
    return None


def _line(
    rs: dict[str, Any], rule: Obj, pattern: re.Pattern[str], stop: re.Pattern[str] | None, line: str, at: float
) -> tuple[str, str] | None:
    if not rs.get("active", True):
        return None
    m = pattern.match(line)
    if m:
        rs["matched"] = max(at, 0.0)
    if stop is not None and stop.match(line):
        rs["active"] = False
        return None
    if not m or not m.groups() or rule.get("metricThreshold") is None or rule.get("operator") not in _OPS:
        return None
    try:
        value = float(m.group(1))
    except (TypeError, ValueError):
        return None
    threshold = int(float(rule["metricThreshold"]))
    if _OPS[rule["operator"]](value, threshold):
        rs["slow"] = int(rs.get("slow", 0)) + 1
    else:
        rs["slow"] = 0
    points = int(rule.get("metricEvaluationDataPoints") or 1)
    if rs["slow"] >= points:
        return (
            f"LogStateSlow_{rule['name']}",
            f"Log monitoring rule {rule['name']} evaluated to SLOW: {value} {rule['operator']} {threshold} "
            f"for {points} consecutive data points",
        )
    return None


def _hanging(rule: Obj, why: str) -> tuple[str, str]:
    return f"LogStateHanging_{rule['name']}", f"Log monitoring rule {rule['name']} evaluated to HANGING: {why}"


def _wall(ts: str, default: float) -> float:
    """The wall time of a log line's RFC 3339 timestamp."""
    import calendar
    import time

    try:
        whole, _, frac = ts.rstrip("Z").partition(".")
        return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float(f"0.{frac or '0'}")
    except ValueError:
        return default
