"""What a step sees: its operation, its phase's recorded state, and a way to record more."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .models import Operation, Phase


@dataclass
class StepContext:
    operation: Operation
    phase: Phase

    @property
    def state(self) -> dict[str, Any]:
        """What this phase recorded in earlier runs (read-only view; use record() to change it)."""
        return dict(self.phase.state)

    @property
    def params(self) -> dict[str, Any]:
        return self.operation.params

    @property
    def target(self):
        op = self.operation
        if op.target_type_id is None:
            return None
        return op.target_type.get_object_for_this_type(pk=op.target_id)

    def record(self, **values: Any) -> None:
        """Persist values in the phase at once, before anything else can go wrong.

        Steps record a resource's id right after submitting its create, so that a retried or
        resumed phase polls what exists instead of creating it twice.
        """
        self.phase.state = {**self.phase.state, **values}
        Phase.objects.filter(pk=self.phase.pk).update(state=self.phase.state)

    def phase_state(self, name: str) -> dict[str, Any]:
        """What an earlier phase of this operation recorded."""
        phase = self.operation.phases.filter(name=name).first()
        return dict(phase.state) if phase else {}
