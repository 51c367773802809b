"""SageMaker managed MLflow in the sandbox: tracking servers and MLflow Apps backed by real `mlflow server`
processes, and simulated trainers (HyperPod pods, a VERL RayJob) logging their metrics there — read
back through MLflow's own REST API, as the product will. One sandbox (and its MLflow servers) serves
the whole module; the hang fault goes through the sandbox's HTTP control API."""

from __future__ import annotations

import json
import socket
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from kubernetes import client as k8s

from sandbox.server import Sandbox
from tests.sandbox.conftest import Account, role
from tests.sandbox.kube.conftest import TOKEN, gpu_node, wait_for
from tests.sandbox.kube.jobs import TRAINING, G, P, V, cond, hpjob, rayjob

SPEEDUP = 2000.0


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    server = Sandbox(tmp_path_factory.mktemp("mlflow-sandbox"), port=0, speedup=SPEEDUP).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def acct(sb: Sandbox) -> Account:
    return Account(sb)


@pytest.fixture(scope="module")
def tracking(sb: Sandbox, acct: Account) -> dict[str, Any]:
    sm = acct.sagemaker
    arn = sm.create_mlflow_tracking_server(
        TrackingServerName="team-exp",
        ArtifactStoreUri="s3://team-bucket/mlflow",
        RoleArn=role(acct, "mlflow-role"),
        TrackingServerSize="Small",
    )["TrackingServerArn"]
    first = sm.describe_mlflow_tracking_server(TrackingServerName="team-exp")
    ready = wait_for(
        lambda: (
            (d := sm.describe_mlflow_tracking_server(TrackingServerName="team-exp"))["TrackingServerStatus"]
            == "Created"
            and d
        ),
        timeout=90,
        interval=0.2,
    )
    return {"arn": arn, "first": first, "ready": ready}


@pytest.fixture(scope="module")
def kube(sb: Sandbox, acct: Account) -> k8s.ApiClient:
    """A cluster in the sandbox's Kubernetes half, served by the sandbox's own HTTP server."""
    key = f"{acct.id}/us-west-2/ml"
    sb.kube.ensure_cluster(key, "1.31")
    sb.kube.sync_nodes(key, [gpu_node(f"hyperpod-i-0000000{i}") for i in range(3)])
    sb.kube.set_addons(key, {TRAINING, "kuberay-operator"})
    cfg = k8s.Configuration(host=f"{sb.aws_endpoint}/k8s/{key}")
    cfg.api_key = {"authorization": f"Bearer {TOKEN}"}
    return k8s.ApiClient(cfg)


def _rest(base: str, path: str, body: dict[str, Any] | None = None, **query: Any) -> dict[str, Any]:
    url = f"{base}/api/2.0/mlflow/{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def _runs(base: str, experiment: str) -> list[dict[str, Any]]:
    exp = _rest(base, "experiments/get-by-name", experiment_name=experiment)["experiment"]
    return _rest(base, "runs/search", {"experiment_ids": [exp["experiment_id"]], "max_results": 100}).get("runs", [])


def _history(base: str, run_id: str, key: str) -> list[dict[str, Any]]:
    return _rest(base, "metrics/get-history", run_id=run_id, metric_key=key, max_results=10000)["metrics"]


def test_a_tracking_server_is_a_real_mlflow_server(acct: Account, tracking: dict[str, Any]) -> None:
    first, ready = tracking["first"], tracking["ready"]
    assert first["TrackingServerStatus"] == "Creating" and first["IsActive"] == "Inactive"
    assert ready["IsActive"] == "Active" and ready["TrackingServerArn"].endswith(":mlflow-tracking-server/team-exp")
    assert ready["TrackingServerUrl"].startswith("http://127.0.0.1:") and ready["MlflowVersion"] == "3.0"
    with urllib.request.urlopen(f"{ready['TrackingServerUrl']}/health", timeout=5) as r:
        assert r.read() == b"OK"
    assert (
        _rest(ready["TrackingServerUrl"], "experiments/search", {"max_results": 10})["experiments"][0]["name"]
        == "Default"
    )
    url = acct.sagemaker.create_presigned_mlflow_tracking_server_url(
        TrackingServerName="team-exp", ExpiresInSeconds=60
    )["AuthorizedUrl"]
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200 and b"MLflow" in r.read()
    summaries = acct.sagemaker.list_mlflow_tracking_servers(TrackingServerStatus="Created")["TrackingServerSummaries"]
    assert [s["TrackingServerName"] for s in summaries] == ["team-exp"]
    with pytest.raises(ClientError) as e:
        acct.sagemaker.create_mlflow_tracking_server(
            TrackingServerName="team-exp", ArtifactStoreUri="s3://b/x", RoleArn=ready["RoleArn"]
        )
    assert e.value.response["Error"]["Code"] == "ResourceInUse"


def test_hyperpod_trainers_log_a_run_per_attempt(
    sb: Sandbox, acct: Account, tracking: dict, kube: k8s.ApiClient
) -> None:
    custom, core = k8s.CustomObjectsApi(kube), k8s.CoreV1Api(kube)
    base = tracking["ready"]["TrackingServerUrl"]
    env = {"MLFLOW_TRACKING_URI": tracking["arn"], "MLFLOW_EXPERIMENT_NAME": "lf-job"}
    manifest = hpjob(
        "lf-job",
        "llama_factory",
        env=env,
        annotations={"sandbox.instantstart.io/run-seconds": "8000"},
        jobMaxRetryCount=1,
    )
    custom.create_namespaced_custom_object(G, V, "default", P, manifest)
    wait_for(lambda: "{'loss':" in core.read_namespaced_pod_log("lf-job-pod-0", "default"), timeout=30, what="steps")
    sb.kube.inject_pod_crash(f"{acct.id}/us-west-2/ml", "default", "lf-job-pod-1")
    wait_for(lambda: cond(custom.get_namespaced_custom_object(G, V, "default", P, "lf-job"), "Succeeded"), timeout=60)
    assert sb.mlflow_runs.flush(20)
    runs = sorted(_runs(base, "lf-job"), key=lambda r: r["info"]["start_time"])
    assert [r["info"]["status"] for r in runs] == ["KILLED", "FINISHED"]  # rank 0 only, one run per attempt
    finished = runs[1]
    losses = _history(base, finished["info"]["run_id"], "loss")
    assert [m["step"] for m in losses] == list(range(2, 41, 2))
    assert losses[-1]["value"] < losses[0]["value"]
    stamps = [m["timestamp"] for m in losses]
    assert stamps == sorted(stamps) and finished["info"]["start_time"] <= stamps[0] <= finished["info"]["end_time"]
    keys = {m["key"] for m in finished["data"]["metrics"]}
    assert {"loss", "grad_norm", "learning_rate", "epoch", "num_input_tokens_seen", "train_runtime"} <= keys
    params = {p["key"]: p["value"] for p in finished["data"]["params"]}
    assert params["finetuning_type"] == "lora" and params["world_size"] == "16"


def test_a_hang_fault_sent_over_http_is_detected(sb: Sandbox, acct: Account, kube: k8s.ApiClient) -> None:
    custom, core = k8s.CustomObjectsApi(kube), k8s.CoreV1Api(kube)
    rules = [{"name": "Progress", "logPattern": ".*'loss'.*", "expectedRecurringFrequencyInSeconds": 120}]
    manifest = hpjob(
        "hangs",
        "llama_factory",
        annotations={"sandbox.instantstart.io/run-seconds": "60000"},
        steps=None,
        jobMaxRetryCount=2,
        logMonitoringConfiguration=rules,
    )
    custom.create_namespaced_custom_object(G, V, "default", P, manifest)
    wait_for(lambda: "{'loss':" in core.read_namespaced_pod_log("hangs-pod-0", "default"), timeout=30)
    fault = {"kind": "job_hang", "account": acct.id, "cluster": "ml", "namespace": "default", "job": "hangs"}
    req = urllib.request.Request(
        f"{sb.aws_endpoint}/_sandbox/faults",
        data=json.dumps(fault).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        assert json.loads(r.read())["faults"][0]["kind"] == "job_hang"
    restarting = wait_for(
        lambda: cond(custom.get_namespaced_custom_object(G, V, "default", P, "hangs"), "Restarting"), timeout=30
    )
    assert restarting["reason"] == "LogStateHanging_Progress"
    # the next attempt is not covered by the fault: it runs again
    wait_for(
        lambda: (
            "remediated"
            in (cond(custom.get_namespaced_custom_object(G, V, "default", P, "hangs"), "Running") or {}).get(
                "message", ""
            )
        ),
        timeout=30,
    )
    # done with it: a minute of healthy training left would only load the tests after this one
    custom.delete_namespaced_custom_object(G, V, "default", P, "hangs")


def test_a_verl_rayjob_logs_to_an_mlflow_app(sb: Sandbox, acct: Account, kube: k8s.ApiClient) -> None:
    sm = acct.sagemaker
    app = sm.create_mlflow_app(
        Name="team-app", ArtifactStoreUri="s3://team-bucket/app", RoleArn=role(acct, "app-role")
    )["Arn"]
    assert sm.describe_mlflow_app(Arn=app)["Status"] == "Creating"
    wait_for(lambda: sm.describe_mlflow_app(Arn=app)["Status"] == "Created", timeout=90, interval=0.2)
    assert [a["Arn"] for a in sm.list_mlflow_apps()["Summaries"]] == [app]
    base = sm.create_presigned_mlflow_app_url(Arn=app)["AuthorizedUrl"].split("/?", 1)[0]
    custom = k8s.CustomObjectsApi(kube)
    custom.create_namespaced_custom_object(
        "ray.io", "v1", "default", "rayjobs", rayjob("rl-exp", env={"MLFLOW_TRACKING_URI": app})
    )
    wait_for(
        lambda: (
            (
                custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "rl-exp").get("status") or {}
            ).get("jobDeploymentStatus")
            == "Complete"
        ),
        timeout=60,
    )
    assert sb.mlflow_runs.flush(20)
    runs = _runs(base, "rl-exp")  # VERL logs under trainer.project_name, run trainer.experiment_name
    assert [r["info"]["run_name"] for r in runs] == ["grpo-qwen3"] and runs[0]["info"]["status"] == "FINISHED"
    scores = _history(base, runs[0]["info"]["run_id"], "critic/score/mean")
    assert [m["step"] for m in scores] == list(range(1, 13)) and scores[-1]["value"] > scores[0]["value"]
    keys = {m["key"] for m in runs[0]["data"]["metrics"]}
    assert {"actor/pg_loss", "perf/throughput", "val-core/openai/gsm8k/reward/mean_at_1"} <= keys


def _refused(url: str) -> bool:
    host, port = urllib.parse.urlparse(url).netloc.split(":")
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) != 0


def test_stop_start_and_delete(sb: Sandbox, acct: Account, tracking: dict[str, Any]) -> None:
    sm = acct.sagemaker
    url = tracking["ready"]["TrackingServerUrl"]
    sm.stop_mlflow_tracking_server(TrackingServerName="team-exp")
    with pytest.raises(ClientError) as e:
        sm.stop_mlflow_tracking_server(TrackingServerName="team-exp")
    assert e.value.response["Error"]["Code"] == "ConflictException"
    wait_for(
        lambda: sm.describe_mlflow_tracking_server(TrackingServerName="team-exp")["TrackingServerStatus"] == "Stopped",
        timeout=30,
    )
    assert _refused(url)  # Stop stops the process
    sm.start_mlflow_tracking_server(TrackingServerName="team-exp")
    started = wait_for(
        lambda: (
            (d := sm.describe_mlflow_tracking_server(TrackingServerName="team-exp"))["TrackingServerStatus"]
            == "Started"
            and d
        ),
        timeout=90,
        interval=0.2,
    )
    assert started["IsActive"] == "Active" and started["TrackingServerUrl"] == url
    assert _runs(url, "lf-job")  # the data survived the stop
    sm.delete_mlflow_tracking_server(TrackingServerName="team-exp")
    wait_for(lambda: not sm.list_mlflow_tracking_servers()["TrackingServerSummaries"], timeout=30)
    assert _refused(url)
    with pytest.raises(ClientError) as e:
        sm.describe_mlflow_tracking_server(TrackingServerName="team-exp")
    assert e.value.response["Error"]["Code"] == "ResourceNotFound"


def test_servers_come_back_after_a_restart_and_never_outlive_the_sandbox(tmp_path: Path, sb: Sandbox) -> None:
    """Run last in the module: it needs the module's sandbox stopped (one Sandbox per process)."""
    sb.stop()
    state = tmp_path / "state"
    first = Sandbox(state, speedup=SPEEDUP).start()
    try:
        acct = Account(first)
        acct.sagemaker.create_mlflow_tracking_server(
            TrackingServerName="keep", ArtifactStoreUri="s3://b/keep", RoleArn=role(acct, "keep-role")
        )
        url = wait_for(
            lambda: (
                (d := acct.sagemaker.describe_mlflow_tracking_server(TrackingServerName="keep"))["TrackingServerStatus"]
                == "Created"
                and d["TrackingServerUrl"]
            ),
            timeout=90,
            interval=0.2,
        )
        _rest(url, "experiments/create", {"name": "kept"})
        pids = first.mlflow.pids()
        assert pids
    finally:
        first.stop()
    assert all(not Path(f"/proc/{pid}").exists() for pid in pids)  # stopped with the sandbox
    again = Sandbox(state, speedup=SPEEDUP).start()
    try:
        acct2 = Account(again, account_id=acct.id)
        desc = acct2.sagemaker.describe_mlflow_tracking_server(TrackingServerName="keep")
        assert desc["TrackingServerStatus"] == "Created" and desc["TrackingServerUrl"] == url
        got = wait_for(lambda: _rest(url, "experiments/get-by-name", experiment_name="kept"), timeout=60, interval=0.2)
        assert got["experiment"]["name"] == "kept"
    finally:
        again.stop()
