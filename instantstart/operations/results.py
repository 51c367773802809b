"""What a step returns, and the errors it may raise."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Done:
    """The phase is finished; the next phase runs on the next advance."""

    message: str = ""


@dataclass(frozen=True)
class Wait:
    """The phase is waiting for the cloud; advance again after ``seconds`` (default: poll interval)."""

    seconds: float | None = None
    message: str = ""


@dataclass(frozen=True)
class Fail:
    """The phase failed for a reason the user must act on; ``hint`` says what to do."""

    message: str
    hint: str = ""
    code: str = "failed"


StepResult = Done | Wait | Fail


class TransientError(Exception):
    """A failure worth retrying with backoff (throttling, 5xx, timeouts)."""


class PermanentError(Exception):
    """A failure that retrying will not fix until the user changes something."""

    def __init__(self, message: str, *, hint: str = "", code: str = "failed") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code
