"""What a step sees: its operation, its phase's recorded state, and ways to record more."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.contrib.contenttypes.models import ContentType

from . import lease
from .models import Operation, Phase


@dataclass
class StepContext:
    operation: Operation
    phase: Phase
    # The lease under which the step runs: records are written only while it is still held.
    lease_token: uuid.UUID | None = None
    # Values of record_with_result(), saved by the engine in the same write as the step's result.
    pending_state: dict[str, Any] = field(default_factory=dict)

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
        # get_for_id is cached per process: no query for the content type on every poll.
        return ContentType.objects.get_for_id(op.target_type_id).get_object_for_this_type(pk=op.target_id)

    def record(self, **values: Any) -> None:
        """Persist values in the phase at once, before anything else can go wrong.

        Steps record a resource's id right after submitting its create, so that a retried or
        resumed phase polls what exists instead of creating it twice. Raises ``LeaseLost`` (the
        engine then drops the step's result) if another worker has taken the operation over.
        """
        self.phase.state = {**self.phase.state, **values}
        lease.record_state(self.phase, self.lease_token, self.phase.state)

    def record_with_result(self, **values: Any) -> None:
        """Keep values in the phase, saved in the same write as the step's result (no extra write).

        For what only matters together with the result: poll counters, the last poll's summary.
        If the worker dies before the result is saved, these values are lost with it and the poll
        simply runs again. Ids of created resources go through record(), which saves at once.
        Outside the engine (no lease) it saves at once, like record().
        """
        if self.lease_token is None:
            self.record(**values)
            return
        self.phase.state = {**self.phase.state, **values}
        self.pending_state.update(values)

    def phase_state(self, name: str) -> dict[str, Any]:
        """What an earlier phase of this operation recorded."""
        phase = self.operation.phases.filter(name=name).first()
        return dict(phase.state) if phase else {}
