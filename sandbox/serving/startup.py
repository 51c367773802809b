"""What an engine does before it serves: find the model (a local path must be a directory with a
config.json, e.g. under the S3 or FSx mount; a Hugging Face id is downloaded, gated repos need a
token), check tensor parallelism against the GPUs the container got, load weights. And the lines
it prints while doing so, or the traceback it dies with (as vLLM and SGLang print them)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from ..kube.quantity import parse_quantity
from ..kube.store import Cluster
from . import catalog, commands
from .commands import ServeSpec
from .objects import ObjectStore
from .volumes import Location, fsx_files, resolve

Obj = dict[str, Any]
LOAD_SECONDS = 40.0  # simulated: weights load + CUDA graph capture of a small model


@dataclass
class Check:
    """What must be true for the engine to start; `files` is filled in for FSx (read in the tick)."""

    spec: ServeSpec
    location: Location | None
    gpus: int
    account: str
    files: list[tuple[str, int]] | None = None
    hf_repo: str | None = None  # an init container downloads this repo into the model path
    hf_token: bool = False


def gpus_of(container: Obj) -> int:
    res = container.get("resources") or {}
    for part in ("limits", "requests"):
        v = (res.get(part) or {}).get("nvidia.com/gpu")
        if v is not None:
            try:
                return int(parse_quantity(str(v)))
            except (ValueError, TypeError):
                return 0
    return 0


def plan(c: Cluster, pod: Obj, container: Obj, spec: ServeSpec) -> Check:
    """Called with the cluster lock held: everything that needs cluster objects."""
    gpus = gpus_of(container)
    loc = None
    if spec.model.startswith("/"):
        loc = resolve(c, pod, container, spec.model)
    check = Check(spec, loc, gpus, c.account)
    if loc is not None and loc.kind == "fsx":
        check.files = fsx_files(c, loc.store, loc.path)
    elif loc is not None and loc.kind == "local":
        check.files = []
        for init in (pod.get("spec") or {}).get("initContainers") or []:
            prog = commands.program(init)
            target = (prog.opt("--local-dir") or "") if prog is not None and prog.kind == "hf-download" else ""
            if target and prog is not None and prog.positionals and spec.model.startswith(target.rstrip("/")):
                check.hf_repo = prog.positionals[0]
                check.hf_token = any(
                    e.get("name") in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
                    and (e.get("value") or _secret_exists(c, pod, e.get("valueFrom")))
                    for e in init.get("env") or []
                )
    return check


def _secret_exists(c: Cluster, pod: Obj, value_from: Obj | None) -> bool:
    ref = (value_from or {}).get("secretKeyRef") or {}
    secret = c.get("/secrets", pod["metadata"]["namespace"], str(ref.get("name", "")))
    return bool(secret) and (
        ref.get("key") in (secret.get("data") or {}) or ref.get("key") in (secret.get("stringData") or {})
    )


def run(check: Check, objects: ObjectStore) -> tuple[list[str] | None, int | None]:
    """(error lines, None) or (None, max model length). Called off the cluster lock."""
    spec = check.spec
    if spec.engine != "lmi" and check.gpus < 1:
        return _fail(spec, "RuntimeError: Failed to infer device type"), None
    if spec.tensor_parallel > check.gpus:
        if spec.engine == "sglang":
            return _fail(
                spec,
                "RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be "
                "asynchronously reported at some other API call, so the stacktrace below might be "
                "incorrect.",
            ), None
        return _fail(
            spec,
            f"ValueError: World size ({spec.tensor_parallel}) is larger than the number of available GPUs "
            f"({check.gpus}) in this node. If this is intentional and you are using:\n"
            "- ray, set '--distributed-executor-backend ray'.\n"
            "- multiprocessing, set '--nnodes' appropriately.",
        ), None
    loc = check.location
    if loc is None:
        if not catalog.valid_id(spec.model):
            return _fail(spec, _invalid_repo(spec.model)), None
        repo = catalog.lookup(spec.model)
        token = spec.env.get("HF_TOKEN") or spec.env.get("HUGGING_FACE_HUB_TOKEN")
        if repo.gated and not token:
            return _fail(spec, gated_error(repo.id, "config.json")), None
        return None, repo.max_len
    if loc.kind == "s3":
        prefix = loc.path.rstrip("/") + "/" if loc.path else ""
        listed = objects.list(check.account, loc.store, prefix)
        files = [(k[len(prefix) :], s) for k, s in listed or []]
        if listed is None:
            return _fail(
                spec, f"OSError: [Errno 5] Input/output error: '{spec.model}' (bucket {loc.store} does not exist)"
            ), None
        if not any(n == "config.json" for n, _ in files):
            return _fail(spec, _invalid_repo(spec.model)), None
        body = objects.get(check.account, loc.store, prefix + "config.json") or b"{}"
        return None, _max_len(body)
    if check.hf_repo:
        repo = catalog.lookup(check.hf_repo)
        if repo.gated and not check.hf_token:
            return _fail(spec, gated_error(repo.id, "config.json")), None
        return None, repo.max_len
    root = loc.path.strip("/") if loc is not None else ""
    want = f"{root}/config.json" if root else "config.json"
    if not any(k == want for k, _ in check.files or []):
        return _fail(spec, _invalid_repo(spec.model)), None
    return None, None


def _max_len(body: bytes) -> int | None:
    try:
        v = json.loads(body).get("max_position_embeddings")
        return int(v) if v else None
    except (ValueError, AttributeError, TypeError):
        return None


def _invalid_repo(model: str) -> str:
    return (
        f"ValueError: Invalid repository ID or local directory specified: '{model}'.\n"
        "Please verify the following requirements:\n"
        "1. Provide a valid Hugging Face repository ID.\n"
        "2. Specify a local directory that contains a recognized configuration file.\n"
        "   - For Hugging Face models: ensure the presence of a 'config.json'.\n"
        "   - For Mistral models: ensure the presence of a 'params.json'."
    )


def gated_error(repo_id: str, filename: str, status: int = 401) -> str:
    rid = f"Root=1-{int(time.time()):x}-5f2b1e0c3a7d4e6f8a9b0c1d"
    if status == 403:
        why = (
            f"Access to model {repo_id} is restricted and you are not in the authorized list. "
            f"Visit https://huggingface.co/{repo_id} to ask for access."
        )
        return f"huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: {rid})\n\n{why}"
    return (
        f"huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: {rid})\n\n"
        f"Cannot access gated repo for url https://huggingface.co/{repo_id}/resolve/main/{filename}.\n"
        f"Access to model {repo_id} is restricted. You must have access to it and be authenticated to access it. "
        "Please log in."
    )


def _fail(spec: ServeSpec, exc: str) -> list[str]:
    if spec.engine == "sglang":
        head = [
            f"[{_ts()}] server_args=ServerArgs(model_path='{spec.model}', tp_size={spec.tensor_parallel}, "
            f"port={spec.port}, host='0.0.0.0')",
            "Traceback (most recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/launch_server.py", line 29, in <module>',
            "    launch_server(server_args)",
        ]
    else:
        head = [
            f"INFO {_vts()} [api_server.py:1880] vLLM API server version 0.10.2",
            f"INFO {_vts()} [utils.py:328] non-default args: {{'model': '{spec.model}', "
            f"'tensor_parallel_size': {spec.tensor_parallel}}}",
            "Traceback (most recent call last):",
            '  File "/usr/local/bin/vllm", line 10, in <module>',
            "    sys.exit(main())",
        ]
    return head + exc.split("\n")


def _ts() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def _vts() -> str:
    return time.strftime("%m-%d %H:%M:%S")


def startup_lines(spec: ServeSpec, max_len: int | None) -> list[str]:
    if spec.engine == "sglang":
        return [
            f"[{_ts()}] server_args=ServerArgs(model_path='{spec.model}', served_model_name='{spec.name}', "
            f"tp_size={spec.tensor_parallel}, port={spec.port}, host='0.0.0.0', enable_metrics={spec.metrics})",
            f"[{_ts()} TP0] Load weight begin. avail mem=78.50 GB",
            f"[{_ts()} TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.20 GB",
            f"[{_ts()} TP0] Capture cuda graph begin. This can take up to several minutes.",
            f"[{_ts()} TP0] max_total_num_tokens=400000, max_running_requests={spec.max_running}, "
            f"context_len={max_len or 32768}",
        ]
    if spec.engine == "lmi":
        return ["INFO  ModelServer Starting model server", f"INFO  ModelInfo Loading model {spec.model} ..."]
    return [
        f"INFO {_vts()} [api_server.py:1880] vLLM API server version 0.10.2",
        f"INFO {_vts()} [utils.py:328] non-default args: {{'model': '{spec.model}', 'served_model_name': "
        f"{spec.served_names!r}, 'tensor_parallel_size': {spec.tensor_parallel}}}",
        f"INFO {_vts()} [__init__.py:742] Resolved architecture: LlamaForCausalLM",
        f"INFO {_vts()} [__init__.py:1815] Using max model len {max_len or 32768}",
        f"INFO {_vts()} [gpu_model_runner.py:1953] Model loading took 14.99 GiB and 11.42 seconds",
        f"INFO {_vts()} [kv_cache_utils.py:849] GPU KV cache size: 400,000 tokens",
        f"INFO {_vts()} [core.py:193] init engine (profile, create kv cache, warmup model) took 28.17 seconds",
    ]


def ready_lines(spec: ServeSpec, port: int) -> list[str]:
    if spec.engine == "sglang":
        return [
            f"[{_ts()}] INFO:     Started server process [1]",
            f"[{_ts()}] INFO:     Waiting for application startup.",
            f"[{_ts()}] INFO:     Application startup complete.",
            f"[{_ts()}] INFO:     Uvicorn running on http://0.0.0.0:{port} (Press CTRL+C to quit)",
            f"[{_ts()}] The server is fired up and ready to roll!",
        ]
    if spec.engine == "lmi":
        return [
            "INFO  ModelServer Initialize BOTH server with: EpollServerSocketChannel.",
            f"INFO  ModelServer BOTH API bind to: http://0.0.0.0:{port}",
        ]
    return [
        f"INFO {_vts()} [api_server.py:1971] Starting vLLM API server 0 on http://0.0.0.0:{port}",
        f"INFO {_vts()} [launcher.py:36] Available routes are:",
        f"INFO {_vts()} [launcher.py:44] Route: /health, Methods: GET",
        f"INFO {_vts()} [launcher.py:44] Route: /v1/models, Methods: GET",
        f"INFO {_vts()} [launcher.py:44] Route: /v1/chat/completions, Methods: POST",
        f"INFO {_vts()} [launcher.py:44] Route: /v1/completions, Methods: POST",
        f"INFO {_vts()} [launcher.py:44] Route: /metrics, Methods: GET",
        "INFO:     Started server process [1]",
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
    ]
