"""Operation kinds: a name mapped to its ordered steps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from instantstart.tenancy.roles import Role

if TYPE_CHECKING:
    from .context import StepContext
    from .results import StepResult

StepFn = Callable[["StepContext"], "StepResult"]


@dataclass(frozen=True)
class Step:
    name: str
    run: StepFn
    # Seconds between polls while this step waits, unless it returns Wait(seconds).
    poll_seconds: float | None = None
    title: str = ""


@dataclass(frozen=True)
class OperationKind:
    name: str
    steps: tuple[Step, ...]
    title: str = ""
    # The role needed to retry or cancel an operation of this kind.
    role: str = Role.MEMBER
    # Runs once when an operation of this kind ends, with its final status (e.g. to mark the target).
    on_finish: Callable | None = field(default=None)
    # Runs when a failed or cancelled operation of this kind is retried (e.g. to mark the target busy).
    on_retry: Callable | None = field(default=None)

    def step(self, name: str) -> Step:
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(f"{self.name} has no step {name!r}")


_KINDS: dict[str, OperationKind] = {}


def register(kind: OperationKind) -> OperationKind:
    if kind.name in _KINDS and _KINDS[kind.name] is not kind:
        raise ValueError(f"operation kind {kind.name!r} registered twice")
    _KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> OperationKind:
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"unknown operation kind {name!r}") from None


def all_kinds() -> list[OperationKind]:
    return sorted(_KINDS.values(), key=lambda kind: kind.name)
