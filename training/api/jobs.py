"""REST: a cluster's training jobs — submit (202), list, read, cancel (202), resubmit (202), logs, metrics."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from clusters.api.clusters import ClusterChildMixin
from instantstart.api.viewsets import TeamViewSet
from instantstart.operations.serializers import OperationSerializer

from ..models import Job, LogLine
from ..readers.mlflow import job_metrics
from ..selectors import get_job, log_lines
from ..serializers import JobListSerializer, JobSerializer, JobSubmitRequestSerializer, validated_submission
from ..serializers.jobs import resubmission
from ..serializers.queries import LogsQuerySerializer, parse_query
from ..services import cancel_job, resubmit_job, submit_job

ACCEPTED = inline_serializer("JobAccepted", {"job": JobSerializer(), "operation": OperationSerializer()})
LOG_LINE = inline_serializer(
    "LogLine",
    {
        "seq": serializers.IntegerField(),
        "pod": serializers.CharField(),
        "ts": serializers.DateTimeField(allow_null=True),
        "text": serializers.CharField(),
    },
)
LOGS = inline_serializer(
    "JobLogs", {"lines": serializers.ListField(child=LOG_LINE), "next": serializers.IntegerField()}
)
METRICS = inline_serializer(
    "JobMetrics",
    {
        "metrics": serializers.DictField(child=serializers.ListField(child=serializers.DictField())),
        "runs": serializers.ListField(child=serializers.DictField()),
    },
)


def line_data(line) -> dict:
    return LogLine.data(line.seq, line.pod, line.ts, line.text)


class JobViewSet(ClusterChildMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """The cluster's training jobs. Submit, cancel and resubmit start operations (202)."""

    queryset = Job.objects.select_related("cluster")
    serializer_class = JobSerializer

    def get_queryset(self):
        return super().get_queryset().filter(cluster=self.cluster)

    def get_serializer_class(self):
        return JobListSerializer if self.action == "list" else JobSerializer

    def get_object(self) -> Job:
        return get_job(self.access, self.kwargs["cluster_pk"], self.kwargs["pk"])

    def _accepted(self, job: Job, operation) -> Response:
        job.refresh_from_db()
        body = {"job": JobSerializer(job).data, "operation": self.operation_data(operation)}
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=JobSubmitRequestSerializer, responses={202: ACCEPTED})
    def create(self, request, cluster_pk=None):
        """Submit a job from a recipe (pytorch, llama_factory, ms_swift, verl) with decision-level fields only."""
        spec = validated_submission(request.data, self.cluster)
        job, operation = submit_job(
            access=self.access, cluster=self.cluster, spec=spec, idempotency_key=self.idempotency_key
        )
        return self._accepted(job, operation)

    @extend_schema(responses={202: OperationSerializer})
    def destroy(self, request, cluster_pk=None, pk=None):
        """Cancel the job (202 with `job.cancel`): it is deleted from the cluster; its logs stay readable."""
        operation = cancel_job(access=self.access, job=self.get_object(), idempotency_key=self.idempotency_key)
        return Response(self.operation_data(operation), status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={202: ACCEPTED})
    @action(detail=True, methods=["post"])
    def resubmit(self, request, cluster_pk=None, pk=None):
        """Submit the same spec again as a new job (202 {job, operation})."""
        job = self.get_object()
        job, operation = resubmit_job(
            access=self.access, job=job, spec=resubmission(job), idempotency_key=self.idempotency_key
        )
        return self._accepted(job, operation)

    @extend_schema(parameters=[LogsQuerySerializer], responses=LOGS)
    @action(detail=True, methods=["get"])
    def logs(self, request, cluster_pk=None, pk=None):
        """Log lines after `after` (pass the answer's `next` back to read on), of one `pod` if given."""
        query = parse_query(LogsQuerySerializer, request.query_params)
        lines, next_seq = log_lines(
            self.get_object(), after=query["after"], pod=query.get("pod", ""), limit=query["limit"]
        )
        return Response({"lines": [line_data(line) for line in lines], "next": next_seq})

    @extend_schema(responses=METRICS)
    @action(detail=True, methods=["get"])
    def metrics(self, request, cluster_pk=None, pk=None):
        """Metric series (loss, throughput, learning_rate, …) over steps, read from the job's MLflow experiment."""
        return Response(job_metrics(self.get_object()))
