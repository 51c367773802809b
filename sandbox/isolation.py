"""Containment of failures in the sandbox's controller loops.

The loops visit every object of every account ten times a second. One object that makes a step
raise (a record the code did not expect, a Node the API server refuses) must cost only that
object its progress: the step runs per object, the error is logged once per change (not every
tick), and the caller may surface it on the object, as real controllers do with status and events.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Hashable
from typing import Any

MAX_KEPT = 50  # tracebacks kept for tests and tools (the log has them all, once each)
MAX_TRACKED = 20_000  # failing keys remembered; past that the memory starts over (a few repeat logs)


class Contained:
    """Runs steps keyed by the object they work on; remembers each key's last error."""

    def __init__(self, logger: logging.Logger, errors: list[str] | None = None) -> None:
        self.log = logger
        self.errors: list[str] = errors if errors is not None else []
        self._last: dict[Hashable, str] = {}

    def run(
        self,
        key: Hashable,
        fn: Callable[..., Any],
        *args: Any,
        on_error: Callable[[str], None] | None = None,
    ) -> Any:
        """fn(*args), or None when it raised. A new or changed error is logged (with its traceback)
        and handed to `on_error`; the same error again is silent until the step succeeds once."""
        try:
            out = fn(*args)
        except Exception as e:  # noqa: BLE001 - containing it is the point
            message = f"{type(e).__name__}: {e}"
            if self._last.get(key) != message:
                if len(self._last) >= MAX_TRACKED:
                    self._last.clear()
                self._last[key] = message
                tb = traceback.format_exc()
                self.log.error("sandbox: %s failed (logged once until it changes)\n%s", _name(key), tb)
                if len(self.errors) < MAX_KEPT:
                    self.errors.append(f"{_name(key)}: {tb}")
                if on_error is not None:
                    try:
                        on_error(message)
                    except Exception:  # noqa: BLE001 - reporting must not undo the containment
                        self.log.exception("sandbox: reporting the failure of %s failed", _name(key))
            return None
        if self._last:
            self._last.pop(key, None)  # recovered: the next failure is news again
        return out

    def failing(self, key: Hashable) -> str | None:
        """The error the key's last run ended with, if it failed."""
        return self._last.get(key)


def _name(key: Hashable) -> str:
    return " ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)
