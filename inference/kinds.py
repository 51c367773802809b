"""Operation kinds of the inference app."""

from __future__ import annotations

from instantstart.operations.models import Operation, OperationStatus
from instantstart.operations.registry import OperationKind, Step, register
from instantstart.tenancy.roles import Role

from .models import DownloadStatus, Endpoint, EndpointStatus, ModelDownload
from .steps import downloads, endpoints


def _mark(status_by_outcome: dict[str, str]):
    def mark(operation: Operation) -> None:
        status = status_by_outcome.get(operation.status, EndpointStatus.FAILED)
        Endpoint.objects.filter(pk=operation.target_id).exclude(status=EndpointStatus.DELETED).update(status=status)

    return mark


def _busy(status: str):
    def mark(operation: Operation) -> None:
        Endpoint.objects.filter(pk=operation.target_id).update(status=status)

    return mark


ENDPOINT_DEPLOY = register(
    OperationKind(
        name="endpoint.deploy",
        title="Deploy endpoint",
        role=Role.MEMBER,
        on_finish=_mark({OperationStatus.SUCCEEDED: EndpointStatus.READY}),
        on_retry=_busy(EndpointStatus.DEPLOYING),
        steps=(
            Step("apply", endpoints.apply_objects, title="Apply the endpoint's objects"),
            Step("ready", endpoints.wait_ready, title="Wait for ready replicas"),
        ),
    )
)

ENDPOINT_SCALE = register(
    OperationKind(
        name="endpoint.scale",
        title="Scale endpoint",
        role=Role.MEMBER,
        on_finish=_mark({OperationStatus.SUCCEEDED: EndpointStatus.READY}),
        on_retry=_busy(EndpointStatus.DEPLOYING),
        steps=(
            Step("scale", endpoints.scale, title="Set the replica count"),
            Step("ready", endpoints.wait_ready, title="Wait for ready replicas"),
        ),
    )
)

ENDPOINT_DELETE = register(
    OperationKind(
        name="endpoint.delete",
        title="Delete endpoint",
        role=Role.MEMBER,
        on_finish=_mark({OperationStatus.SUCCEEDED: EndpointStatus.DELETED}),
        on_retry=_busy(EndpointStatus.DELETING),
        steps=(
            Step("remove", endpoints.remove_objects, title="Delete what the deploy created"),
            Step("gone", endpoints.wait_gone, title="Wait until it is gone"),
        ),
    )
)


def _downloaded(operation: Operation) -> None:
    if operation.status == OperationStatus.FAILED:
        ModelDownload.objects.filter(pk=operation.target_id).update(status=DownloadStatus.FAILED)


MODEL_DOWNLOAD = register(
    OperationKind(
        name="model.download",
        title="Download model",
        role=Role.MEMBER,
        on_finish=_downloaded,
        steps=(
            Step("submit", downloads.submit, title="Start the download Job"),
            Step("download", downloads.wait, title="Download (progress from the Job's log)"),
        ),
    )
)
