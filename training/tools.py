"""MCP tools of the training app: each one is a training REST endpoint (same auth, scoping, errors).

Discovered at startup by agent_tools. Method, path parameters, arguments and the answer's schema are read
from the REST route and the view's ``extend_schema``; only names, descriptions and annotations are here.
"""

from __future__ import annotations

from agent_tools.registry import Tool, register

from .api.files import FileViewSet
from .api.jobs import JobViewSet

_JOB_SHAPE = (
    "A job is {id, name, recipe, kind (HyperPodPyTorchJob|RayJob), namespace, k8s_name, status (pending|running|"
    "restarting|hung|succeeded|failed|cancelled), status_message, hang_detected, nodes, gpus, restarts {used, max}, "
    "pods [{name, node, phase, restarts}], faulty_nodes, events [...], created_at, started_at, finished_at, "
    "manifest}."
)
_NOT_FOUND = "A cluster or job id of another team is a not_found error."
_ACCEPTED = (
    "Returns at once (HTTP 202) {job, operation}. Next: call get_job with job.id every few seconds until its status "
    "is succeeded, failed or cancelled; get_job_logs and get_job_metrics show progress meanwhile."
)

register(
    Tool(
        name="list_jobs",
        title="List training jobs",
        description=(
            "List a cluster's training jobs, newest first, with status, restarts used/budget, GPUs and pods. "
            "Input: cluster_id. Returns {count, next, previous, results: [job without manifest and events]}. "
            + _JOB_SHAPE
            + " "
            + _NOT_FOUND
            + " Next: get_job for one job, submit_job to start one."
        ),
        view=JobViewSet,
        action="list",
        read_only=True,
    ),
    Tool(
        name="get_job",
        title="Get a training job",
        description=(
            "Get one training job: status as the cluster reports it (restarting after a crash or node fault, hung "
            "when log monitoring found no progress), restarts {used, max}, pods, faulty nodes, events and the "
            "manifest that was sent. Inputs: cluster_id, job_id. " + _JOB_SHAPE + " " + _NOT_FOUND
        ),
        view=JobViewSet,
        action="retrieve",
        read_only=True,
    ),
    Tool(
        name="submit_job",
        title="Submit a training job",
        description=(
            "Submit a training job on a cluster from a recipe, with decision-level inputs only (the manifest is "
            "made, checked against the operator's CRD schema and applied by the control plane). Needs the "
            "training_operator feature (recipes pytorch, llama_factory, ms_swift) or kuberay (verl): without it "
            "the call is a feature_required conflict naming the feature; enable it with update_features. Inputs: "
            "cluster_id, name (3-40 lowercase letters, digits, dashes), recipe (pytorch|llama_factory|ms_swift|"
            "verl), instance_group (a group of the cluster; its type sets GPUs and EFA per node), nodes, optional "
            "gpus_per_node (default: all of the type), image (a default per recipe), env {NAME: value}, storage "
            "(['s3'] default, and/or 'fsx'; mounted at /s3 and /fsx), mlflow (default true: metrics to the "
            "cluster's MLflow), max_retries (restarts before the job fails, default 5), hang_detection (rules "
            "with the operator's logMonitoringConfiguration fields: name, logPattern, "
            "expectedStartCutOffInSeconds, expectedRecurringFrequencyInSeconds, metricThreshold, operator, "
            "metricEvaluationDataPoints, stopPattern; default: one rule per recipe; [] turns it off), elastic "
            "{min_replicas, max_replicas} (not on spot groups). Per recipe: pytorch → script (a path such as "
            "/s3/scripts/train.py; upload it first, see list_files), args; llama_factory → config (YAML inline or "
            "a /s3/….yaml path; needs model_name_or_path, stage, dataset, output_dir); ms_swift → command (sft|pt|"
            "rlhf), config and/or args; verl → entrypoint (a /s3/….sh script or a command), worker_replicas. A "
            "path that does not exist or a bad field is a validation error naming the field, and nothing is "
            "submitted. " + _ACCEPTED + " " + _NOT_FOUND
        ),
        view=JobViewSet,
        action="create",
        status_tool="get_job",
    ),
    Tool(
        name="cancel_job",
        title="Cancel a training job",
        description=(
            "Cancel a training job: it is deleted from the cluster (its pods stop); its logs stay readable with "
            "get_job_logs. Confirm with the user first. Inputs: cluster_id, job_id. Cancelling a job that already "
            "ended is a conflict; a repeat while the cancel runs returns the same operation. Returns at once (HTTP "
            "202) the operation. Next: get_job until its status is cancelled. " + _NOT_FOUND
        ),
        view=JobViewSet,
        action="destroy",
        status_tool="get_job",
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="resubmit_job",
        title="Resubmit a training job",
        description=(
            "Start a job's spec again as a new job (same name and inputs; the old job and its logs stay). Inputs: "
            "cluster_id, id. " + _ACCEPTED + " " + _NOT_FOUND
        ),
        view=JobViewSet,
        action="resubmit",
        status_tool="get_job",
    ),
    Tool(
        name="get_job_logs",
        title="Get a training job's logs",
        description=(
            "Read a job's log lines (every pod's, each with a per-job sequence number): {lines: [{seq, pod, ts, "
            "text}], next}. Inputs: cluster_id, job_id, after (read lines after this seq; 0 from the start), limit "
            "(default 1000), pod (only that pod's lines). To follow a running job, call again with after=next. "
            "Lines of finished jobs stay readable. " + _NOT_FOUND
        ),
        view=JobViewSet,
        action="logs",
        read_only=True,
    ),
    Tool(
        name="get_job_metrics",
        title="Get a training job's metrics",
        description=(
            "Read a job's metric series from its MLflow experiment: {metrics: {loss: [{step, value, ts, run}], "
            "throughput: [...], learning_rate: [...], ...}, runs: [{id, name, status}]} (one run per attempt: a "
            "restart starts a new run). Empty until the first step is logged; a job submitted with mlflow off is "
            "a conflict. Inputs: cluster_id, job_id. " + _NOT_FOUND
        ),
        view=JobViewSet,
        action="metrics",
        read_only=True,
    ),
    Tool(
        name="list_files",
        title="List shared files",
        description=(
            "List files in the team's shared bucket of a cluster — the bucket mounted at /s3 in every job's pods. "
            "Inputs: cluster_id, prefix (optional, e.g. scripts/). Returns {results: [{path, size, modified, "
            "mount_path}]}; use mount_path (/s3/<path>) as a job's script or config. Upload with POST "
            "/api/v1/clusters/{id}/files/ (multipart file + path) or the portal's Training page. " + _NOT_FOUND
        ),
        view=FileViewSet,
        action="list",
        read_only=True,
    ),
)
