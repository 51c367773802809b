"""Serving pods' processes: hand every cluster to the world's ServingHub each tick (it decides
which pods get a simulated vLLM/SGLang/router/Prometheus listener; see sandbox/serving/hub.py)."""

from __future__ import annotations

from ..store import Cluster
from .base import Ctx


def run(c: Cluster, ctx: Ctx) -> None:
    if ctx.serving is not None:
        ctx.serving.reconcile(c, ctx)
