"""Celery tasks of the engine. They take primary keys and reload; the engine does the rest."""

from __future__ import annotations

from celery import shared_task

from . import engine
from .queue import ADVANCE_TASK, SWEEP_TASK


@shared_task(name=ADVANCE_TASK, ignore_result=True)
def advance_task(operation_id: str) -> str:
    return engine.advance(operation_id).action


@shared_task(name=SWEEP_TASK, ignore_result=True)
def sweep_task() -> int:
    return engine.sweep()
