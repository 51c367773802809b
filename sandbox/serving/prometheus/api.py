"""Prometheus's HTTP API, the parts KEDA, Grafana-style clients and the product use:
/api/v1/query, /api/v1/query_range, /api/v1/series, /api/v1/labels, /api/v1/label/<name>/values,
/api/v1/targets, /api/v1/status/buildinfo, /-/healthy, /-/ready (same JSON envelope and errorType
values as Prometheus)."""

from __future__ import annotations

import math
import time
from typing import Any

from aiohttp import web

from .promql import Evaluator, QueryError
from .scrape import Prometheus

VERSION = "3.5.0"


def _fmt(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v)) if not float(v).is_integer() else str(int(v)) if abs(v) < 1e15 else repr(float(v))


def _bad(msg: str, status: int = 400, etype: str = "bad_data") -> web.Response:
    return web.json_response({"status": "error", "errorType": etype, "error": msg}, status=status)


def _time(s: str | None, default: float) -> float:
    if not s:
        return default
    try:
        return float(s)
    except ValueError:
        from datetime import datetime

        try:
            return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise QueryError(f'cannot parse "{s}" to a valid timestamp') from None


def make_app(prom: Prometheus) -> web.Application:
    app = web.Application()

    async def params(request: web.Request) -> dict[str, Any]:
        out: dict[str, Any] = dict(request.query)
        if request.method == "POST":
            form = await request.post()
            out.update({k: v for k, v in form.items()})
        out["match[]"] = request.query.getall("match[]", [])
        return out

    async def query(request: web.Request) -> web.Response:
        p = await params(request)
        q = p.get("query")
        if not q:
            return _bad('invalid parameter "query": unknown position: parse error: no expression found in input')
        try:
            t = _time(p.get("time"), time.time())
            kind, value = Evaluator(prom.db, prom.speedup).instant(q, t)
        except QueryError as e:
            return _bad(f'invalid parameter "query": {e}')
        if kind == "scalar":
            result: Any = [t, _fmt(value)]
        elif kind == "string":
            result = [t, value]
        elif kind == "matrix":
            result = [{"metric": m, "values": [[ts, _fmt(v)] for ts, v in pts]} for m, pts in value]
        else:
            result = [{"metric": m, "value": [t, _fmt(v)]} for m, v in value]
        return web.json_response({"status": "success", "data": {"resultType": kind, "result": result}})

    async def query_range(request: web.Request) -> web.Response:
        p = await params(request)
        q = p.get("query")
        try:
            start = _time(p.get("start"), 0)
            end = _time(p.get("end"), 0)
            from .scrape import _duration

            step = _duration(p.get("step"), 0) or float(p.get("step") or 0)
        except (QueryError, ValueError) as e:
            return _bad(str(e))
        if not q:
            return _bad('invalid parameter "query": unknown position: parse error: no expression found in input')
        if step <= 0:
            return _bad("zero or negative query resolution step widths are not accepted. Try a positive integer")
        if end < start:
            return _bad('invalid parameter "end": end timestamp must not be before start time')
        real_step = step / prom.speedup
        if (end - start) / real_step > 11000:
            return _bad(
                "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
                "resolution (?step=XX)"
            )
        ev = Evaluator(prom.db, prom.speedup)
        series: dict[tuple[tuple[str, str], ...], list[list[Any]]] = {}
        t = start
        try:
            while t <= end:
                kind, value = ev.instant(q, t)
                if kind == "scalar":
                    series.setdefault((), []).append([t, _fmt(value)])
                elif kind == "vector":
                    for m, v in value:
                        series.setdefault(tuple(sorted(m.items())), []).append([t, _fmt(v)])
                else:
                    return _bad(f'invalid expression type "{kind}" for range query, must be Scalar or instant Vector')
                t += real_step
        except QueryError as e:
            return _bad(f'invalid parameter "query": {e}')
        result = [{"metric": dict(k), "values": v} for k, v in series.items()]
        return web.json_response({"status": "success", "data": {"resultType": "matrix", "result": result}})

    def _matching(match: list[str]) -> list[dict[str, str]]:
        ev = Evaluator(prom.db, prom.speedup)
        out: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        for sel in match or []:
            _kind, value = ev.instant(sel, time.time())
            for m, _ in value:
                out[tuple(sorted(m.items()))] = m
        return list(out.values())

    async def series(request: web.Request) -> web.Response:
        p = await params(request)
        if not p["match[]"]:
            return _bad("no match[] parameter provided")
        try:
            return web.json_response({"status": "success", "data": _matching(p["match[]"])})
        except QueryError as e:
            return _bad(str(e))

    def _all_labels() -> list[dict[str, str]]:
        return [dict(k) for k, _ in prom.db.snapshot()]

    async def labels(request: web.Request) -> web.Response:
        names = sorted({k for m in _all_labels() for k in m})
        return web.json_response({"status": "success", "data": names})

    async def label_values(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        values = sorted({m[name] for m in _all_labels() if name in m})
        return web.json_response({"status": "success", "data": values})

    async def targets(request: web.Request) -> web.Response:
        active = [
            {
                "discoveredLabels": t.discovered,
                "labels": t.labels,
                "scrapePool": t.job,
                "scrapeUrl": f"http://{t.address}{t.url_path}",
                "globalUrl": f"http://{t.address}{t.url_path}",
                "lastError": t.last_error,
                "lastScrape": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t.last_scrape)) if t.last_scrape else "",
                "lastScrapeDuration": t.duration,
                "health": t.health,
                "scrapeInterval": f"{int(t.interval)}s",
            }
            for t in prom.targets.values()
        ]
        return web.json_response({"status": "success", "data": {"activeTargets": active, "droppedTargets": []}})

    async def buildinfo(request: web.Request) -> web.Response:
        return web.json_response(
            {
                "status": "success",
                "data": {"version": VERSION, "revision": "sandbox", "branch": "HEAD", "goVersion": "go1.24.4"},
            }
        )

    async def healthy(request: web.Request) -> web.Response:
        return web.Response(text="Prometheus Server is Healthy.\n")

    async def ready(request: web.Request) -> web.Response:
        return web.Response(text="Prometheus Server is Ready.\n")

    for path, h in (
        ("/api/v1/query", query),
        ("/api/v1/query_range", query_range),
        ("/api/v1/series", series),
        ("/api/v1/labels", labels),
    ):
        app.router.add_get(path, h)
        app.router.add_post(path, h)
    app.router.add_get("/api/v1/label/{name}/values", label_values)
    app.router.add_get("/api/v1/targets", targets)
    app.router.add_get("/api/v1/status/buildinfo", buildinfo)
    app.router.add_get("/-/healthy", healthy)
    app.router.add_get("/-/ready", ready)
    return app
