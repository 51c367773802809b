"""Operation kinds of the training app."""

from __future__ import annotations

from django.utils import timezone

from instantstart.operations.models import Operation, OperationStatus
from instantstart.operations.registry import OperationKind, Step, register
from instantstart.tenancy.roles import Role

from .models import Job, JobStatus
from .steps import cancel, submit


def _submitted(operation: Operation) -> None:
    # A submit that failed or was cancelled before the job ended leaves no job running as far as we know.
    if operation.status == OperationStatus.FAILED:
        Job.objects.filter(pk=operation.target_id).exclude(status__in=JobStatus.terminal()).update(
            status=JobStatus.FAILED,
            status_message=operation.error_message[:4000],
            finished_at=timezone.now(),
        )


def _cancelled(operation: Operation) -> None:
    if operation.status == OperationStatus.SUCCEEDED:
        Job.objects.filter(pk=operation.target_id).update(status=JobStatus.CANCELLED, finished_at=timezone.now())


JOB_SUBMIT = register(
    OperationKind(
        name="job.submit",
        title="Submit training job",
        role=Role.MEMBER,
        on_finish=_submitted,
        steps=(
            Step("validate", submit.validate, title="Validate: feature enabled, manifest matches the CRD schema"),
            Step("apply", submit.apply, title="Apply the job (MLflow tracking server first)"),
            Step("running", submit.follow, title="Running: status, pods, events and logs until the job ends"),
        ),
    )
)

JOB_CANCEL = register(
    OperationKind(
        name="job.cancel",
        title="Cancel training job",
        role=Role.MEMBER,
        on_finish=_cancelled,
        steps=(Step("delete", cancel.delete, title="Delete the job (its logs stay)"),),
    )
)
