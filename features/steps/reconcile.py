"""Phase `features` of `cluster.reconcile`: put drifted features back to what was asked for, by
starting one `features.update` with exactly the differing features, and waiting for it."""

from __future__ import annotations

from clusters.steps.base import cluster_of
from instantstart.operations.context import StepContext
from instantstart.operations.models import Operation, OperationStatus
from instantstart.operations.results import Done, Fail, Wait
from instantstart.tenancy.services import system_access

from ..planning import healthy, present, resolve
from ..readers.state import read_state
from ..selectors import records_of
from ..services import update_features

POLL_SECONDS = 10


def drifted_request(state, records) -> dict[str, dict]:
    """The features whose actual state differs from the recorded desire, as a PATCH body would say them."""
    request = {}
    for name, record in records.items():
        if record.installed:
            continue  # dependencies follow the features that need them
        if record.desired and not healthy(state, name):
            request[name] = {"enabled": True, "settings": {}}
        elif not record.desired and present(state, name):
            request[name] = {"enabled": False, "settings": {}}
    return request


def run(ctx: StepContext):
    cluster = cluster_of(ctx)
    started = ctx.state.get("operation_id")
    if not started:
        records = records_of(cluster)
        if not records:
            return Done("no features were asked for")
        state = read_state(cluster)
        request = drifted_request(state, records)
        if not request:
            return Done("features match what was asked for")
        plan, errors = resolve(cluster, state, records, request)
        if errors:
            return Done("features drifted but cannot be put back: " + "; ".join(m for v in errors.values() for m in v))
        operation = update_features(
            access=system_access(cluster.team, ctx.operation.requested_by), cluster=cluster, request=request, plan=plan
        )
        if operation is None:
            return Done("features match what was asked for")
        ctx.record(operation_id=str(operation.pk), features=sorted(request))
        started = str(operation.pk)
    child = Operation.objects.get(pk=started)
    if child.status == OperationStatus.SUCCEEDED:
        return Done(f"features put back: {', '.join(ctx.state.get('features', []))}")
    if child.is_terminal:
        return Fail(
            f"features.update {child.pk} {child.status}: {child.error_message}",
            hint="Open that operation and retry it.",
            code="FeaturesNotRepaired",
        )
    return Wait(POLL_SECONDS, f"waiting for features.update {child.pk}")
