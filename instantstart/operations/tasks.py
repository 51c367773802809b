"""Celery tasks of the engine. They take primary keys and reload; the engine does the rest."""

from __future__ import annotations

from celery import shared_task

from . import engine


@shared_task(name="instantstart.operations.tasks.advance", ignore_result=True)
def advance_task(operation_id: str) -> str:
    return engine.advance(operation_id).action


@shared_task(name="instantstart.operations.tasks.sweep", ignore_result=True)
def sweep_task() -> int:
    return engine.sweep()
