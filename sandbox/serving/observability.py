"""The HyperPod observability add-on's side of inference metrics: its collector scrapes inference
endpoints into the cluster's Amazon Managed Prometheus workspace, which is what the managed path's
KEDA triggers query (the InferenceEndpointConfig CRD accepts only an AMP workspace URL there)."""

from __future__ import annotations

import re
import time

from .prometheus.promql import Evaluator, QueryError
from .prometheus.scrape import Prometheus

OBSERVABILITY_ADDON = "amazon-sagemaker-hyperpod-observability"
AMP_URL = re.compile(
    r"^https://aps-workspaces\.[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*\.amazonaws\.com/workspaces/ws-[a-zA-Z0-9-]+$"
)
# what the HyperPod observability add-on's collector scrapes from inference endpoints and remote-writes
# to the cluster's Amazon Managed Prometheus workspace: each model container and its sidecar's metrics
AMP_SCRAPE = {
    "global": {"scrape_interval": "15s"},
    "scrape_configs": [
        {
            "job_name": "hyperpod-inference-model",
            "kubernetes_sd_configs": [{"role": "pod"}],
            "relabel_configs": [
                {
                    "source_labels": ["__meta_kubernetes_pod_label_deploying_service"],
                    "regex": "hyperpod-inference",
                    "action": "keep",
                },
                {
                    "source_labels": ["__meta_kubernetes_pod_container_name", "__meta_kubernetes_pod_label_app"],
                    "regex": r"(.+);\1",
                    "action": "keep",
                },
                {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
                {"source_labels": ["__meta_kubernetes_pod_label_app"], "target_label": "deployment"},
            ],
        },
        {
            "job_name": "hyperpod-inference-sidecar",
            "kubernetes_sd_configs": [{"role": "pod"}],
            "relabel_configs": [
                {
                    "source_labels": ["__meta_kubernetes_pod_label_deploying_service"],
                    "regex": "hyperpod-inference",
                    "action": "keep",
                },
                {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": "metrics", "action": "keep"},
                {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
                {"source_labels": ["__meta_kubernetes_pod_label_app"], "target_label": "deployment"},
            ],
        },
    ],
}


def amp_value(amp: Prometheus | None, query: str, speedup: float) -> tuple[float | None, str | None, float]:
    """A query to the workspace, evaluated in process (AMP is an AWS API, not an address in the
    cluster). Without the observability add-on nothing was remote-written: the answer is empty,
    which KEDA reads as 0."""
    now = time.time()
    if amp is None:
        return 0.0, None, now
    try:
        kind, value = Evaluator(amp.db, speedup).instant(query, now)
    except QueryError as e:
        return None, f"prometheus query api returned error. status: 400 response: {e}", now
    if kind == "scalar":
        return float(value), None, now
    if not value:
        return 0.0, None, now
    if len(value) > 1:
        return None, f"prometheus query {query} returned multiple elements", now
    return float(value[0][1]), None, now
