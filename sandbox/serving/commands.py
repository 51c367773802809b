"""What a container runs, read from its command, args and env the way the program would parse them.

Recognised programs: `vllm serve` / `python -m vllm.entrypoints.openai.api_server` (also the
`vllm/vllm-openai` image's entrypoint when only args are given), `python -m sglang.launch_server`,
`python -m sglang_router.launch_router`, Prometheus (`prometheus --config.file=...`), the
DJL/LMI serving image the HyperPod JumpStart path uses, and `hf download` /
`huggingface-cli download` (download Jobs). Shell wrappers (`bash -c "..."`) are looked into.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

VLLM_PORT = 8000
SGLANG_PORT = 30000
ROUTER_PORT = 30000
ROUTER_METRICS_PORT = 29000
PROMETHEUS_PORT = 9090
LMI_PORT = 8080

# flags that take no value (so that the token after them stays a positional)
_BOOLEAN_FLAGS = {
    "--trust-remote-code",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--enforce-eager",
    "--enable-auto-tool-choice",
    "--disable-log-requests",
    "--no-enable-log-requests",
    "--disable-log-stats",
    "--enable-chunked-prefill",
    "--enable-metrics",
    "--service-discovery",
    "--disable-radix-cache",
    "--enable-lora",
    "--skip-tokenizer-init",
    "--enable-reasoning",
    "--quiet",
    "--force-download",
    "--web.enable-lifecycle",
    "--web.enable-admin-api",
    "--web.enable-remote-write-receiver",
    "--log-requests",
    "--enable-igw",
    "--pd-disaggregation",
}


@dataclass
class Program:
    """A recognised program and its parsed options."""

    kind: str  # vllm | sglang | lmi | router | prometheus | hf-download
    argv: list[str]
    options: dict[str, list[str]] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)

    def opt(self, *names: str, default: str | None = None) -> str | None:
        for n in names:
            if self.options.get(n):
                return self.options[n][-1]
        return default

    def opts(self, *names: str) -> list[str]:
        out: list[str] = []
        for n in names:
            out.extend(self.options.get(n) or [])
        return out

    def flag(self, *names: str) -> bool:
        return any(n in self.options for n in names)

    def int_opt(self, *names: str, default: int) -> int:
        v = self.opt(*names)
        try:
            return int(v) if v is not None else default
        except ValueError:
            return default


@dataclass
class ServeSpec:
    """An inference server's configuration, as its own argument parser would read it."""

    engine: str  # vllm | sglang | lmi
    model: str  # path or Hugging Face id, as given
    served_names: list[str]
    port: int
    tensor_parallel: int
    max_model_len: int | None
    max_running: int
    metrics: bool
    prefix_caching: bool
    kv_connector: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    api_key: str | None = None  # --api-key / VLLM_API_KEY: /v1 routes then need "Authorization: Bearer <key>"

    @property
    def name(self) -> str:
        return self.served_names[0] if self.served_names else self.model


@dataclass
class RouterSpec:
    """`sglang_router.launch_router` options."""

    port: int
    metrics_port: int
    policy: str
    selector: dict[str, str]
    discovery: bool
    discovery_port: int
    discovery_namespace: str | None
    worker_urls: list[str]


def _split_flags(tokens: list[str], multi: set[str] = frozenset()) -> tuple[dict[str, list[str]], list[str]]:
    """argparse-like: --k v, --k=v, -k v; `multi` flags take every following non-flag token."""
    options: dict[str, list[str]] = {}
    positionals: list[str] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.startswith("-") and len(t) > 1 and not _is_number(t):
            if "=" in t:
                k, v = t.split("=", 1)
                options.setdefault(k, []).append(v)
            elif t in _BOOLEAN_FLAGS:
                options.setdefault(t, [])
            elif t in multi:
                vals = []
                while i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                    i += 1
                    vals.append(tokens[i])
                options.setdefault(t, []).extend(vals)
            elif i + 1 < len(tokens) and not (tokens[i + 1].startswith("-") and not _is_number(tokens[i + 1])):
                options.setdefault(t, []).append(tokens[i + 1])
                i += 1
            else:
                options.setdefault(t, [])
        else:
            positionals.append(t)
        i += 1
    return options, positionals


def _is_number(t: str) -> bool:
    try:
        float(t)
        return True
    except ValueError:
        return False


def _argv(container: Obj) -> list[str]:
    cmd = [str(x) for x in container.get("command") or []]
    args = [str(x) for x in container.get("args") or []]
    argv = cmd + args
    # `bash -c "<script>"`: the program is somewhere in the script
    if len(argv) >= 2 and argv[0].rsplit("/", 1)[-1] in ("sh", "bash") and "-c" in argv[1:3]:
        script = argv[argv.index("-c") + 1] if argv.index("-c") + 1 < len(argv) else ""
        try:
            argv = shlex.split(script.replace("\\\n", " "), comments=True)
        except ValueError:
            argv = script.split()
    return argv


def _after(argv: list[str], *markers: str) -> list[str] | None:
    """The tokens after the first marker found (a statement separator ends them)."""
    for i, t in enumerate(argv):
        if t in markers:
            rest = argv[i + 1 :]
            for j, r in enumerate(rest):
                if r in ("&&", ";", "||", "|"):
                    return rest[:j]
            return rest
    return None


def program(container: Obj) -> Program | None:
    """The program a container runs, or None when it is nothing the sandbox simulates."""
    argv = _argv(container)
    image = str(container.get("image", ""))
    for i, t in enumerate(argv):
        if t.rsplit("/", 1)[-1] == "vllm" and i + 1 < len(argv) and argv[i + 1] == "serve":
            return _prog("vllm", argv[i + 2 :])
    rest = _after(argv, "vllm.entrypoints.openai.api_server")
    if rest is not None:
        return _prog("vllm", rest)
    rest = _after(argv, "sglang.launch_server")
    if rest is not None:
        return _prog("sglang", rest)
    rest = _after(argv, "vllm_router.app")
    if rest is not None:
        return _prog("hprouter", rest)
    rest = _after(argv, "sglang_router.launch_router", "sglang_router.launch_server")
    if rest is not None:
        return _prog("router", rest, multi={"--selector", "--worker-urls", "--prometheus-selector"})
    for i, t in enumerate(argv):
        if t.rsplit("/", 1)[-1] in ("hf", "huggingface-cli") and i + 1 < len(argv) and argv[i + 1] == "download":
            tail = _after(argv[i:], "download") or []
            return _prog("hf-download", tail)
    if argv and argv[0].rsplit("/", 1)[-1] == "prometheus" or (not argv and "prometheus/prometheus" in image):
        return _prog("prometheus", argv[1:] if argv else [])
    if "prom/prometheus" in image or "prometheus/prometheus" in image:
        return _prog("prometheus", [a for a in argv if a.startswith("-")])
    # the vllm/vllm-openai image's ENTRYPOINT is `vllm serve`: args alone are its arguments
    if "vllm-openai" in image and not container.get("command"):
        return _prog("vllm", [str(x) for x in container.get("args") or []])
    if "djl-inference" in image or "/lmi" in image:
        return _prog("lmi", argv)
    return None


def _prog(kind: str, tokens: list[str], multi: set[str] = frozenset()) -> Program:
    options, positionals = _split_flags(tokens, set(multi))
    return Program(kind, tokens, options, positionals)


def env_of(container: Obj) -> dict[str, str]:
    return {
        str(e.get("name")): str(e.get("value", ""))
        for e in container.get("env") or []
        if isinstance(e, dict) and e.get("name") and "valueFrom" not in e
    }


def serve_spec(container: Obj, prog: Program) -> ServeSpec | None:
    env = env_of(container)
    if prog.kind == "vllm":
        model = prog.opt("--model") or (prog.positionals[0] if prog.positionals else None) or "Qwen/Qwen3-0.6B"
        kv = prog.opt("--kv-transfer-config")
        return ServeSpec(
            "vllm",
            model,
            prog.opts("--served-model-name") or [model],
            prog.int_opt("--port", default=VLLM_PORT),
            prog.int_opt("--tensor-parallel-size", "-tp", default=1),
            prog.int_opt("--max-model-len", default=0) or None,
            prog.int_opt("--max-num-seqs", default=256),
            True,
            not prog.flag("--no-enable-prefix-caching"),
            "LMCacheConnectorV1" if kv and "LMCache" in kv else None,
            env,
            prog.opt("--api-key") or env.get("VLLM_API_KEY") or None,
        )
    if prog.kind == "sglang":
        model = prog.opt("--model-path", "--model") or "meta-llama/Llama-3.1-8B-Instruct"
        return ServeSpec(
            "sglang",
            model,
            prog.opts("--served-model-name") or [model],
            prog.int_opt("--port", default=SGLANG_PORT),
            prog.int_opt("--tp-size", "--tp", "--tensor-parallel-size", default=1),
            prog.int_opt("--context-length", default=0) or None,
            prog.int_opt("--max-running-requests", default=256),
            prog.flag("--enable-metrics"),
            not prog.flag("--disable-radix-cache"),
            None,
            env,
            prog.opt("--api-key") or None,
        )
    if prog.kind == "lmi":
        model = env.get("HF_MODEL_ID") or env.get("OPTION_MODEL_ID") or env.get("SM_MODEL_ID") or "/opt/ml/model"
        return ServeSpec(
            "lmi",
            model,
            [env.get("SERVED_MODEL_NAME") or model],
            LMI_PORT,
            int(env.get("OPTION_TENSOR_PARALLEL_DEGREE", "1") or 1)
            if (env.get("OPTION_TENSOR_PARALLEL_DEGREE") or "1").isdigit()
            else 1,
            None,
            int(env.get("OPTION_MAX_ROLLING_BATCH_SIZE", "256") or 256),
            False,
            True,
            None,
            env,
        )
    return None


def router_spec(prog: Program) -> RouterSpec:
    selector = {}
    for item in prog.opts("--selector"):
        k, _, v = item.partition("=")
        if k:
            selector[k] = v
    return RouterSpec(
        port=prog.int_opt("--port", default=ROUTER_PORT),
        metrics_port=prog.int_opt("--prometheus-port", default=ROUTER_METRICS_PORT),
        policy=prog.opt("--policy", default="cache_aware") or "cache_aware",
        selector=selector,
        discovery=prog.flag("--service-discovery"),
        discovery_port=prog.int_opt("--service-discovery-port", default=80),
        discovery_namespace=prog.opt("--service-discovery-namespace"),
        worker_urls=prog.opts("--worker-urls"),
    )


def hyperpod_router_spec(prog: Program) -> tuple[RouterSpec, str]:
    """The inference operator's router (vLLM production-stack router flags); returns the spec and
    the session header used by the `session` strategy."""
    selector = {}
    for item in (prog.opt("--k8s-label-selector") or "").split(","):
        k, _, v = item.partition("=")
        if k:
            selector[k.strip()] = v.strip()
    spec = RouterSpec(
        port=prog.int_opt("--port", default=8080),
        metrics_port=0,
        policy=prog.opt("--routing-logic", default="prefixaware") or "prefixaware",
        selector=selector,
        discovery=prog.flag("--service-discovery"),  # "--service-discovery k8s"
        discovery_port=prog.int_opt("--k8s-port", default=8080),
        discovery_namespace=prog.opt("--k8s-namespace"),
        worker_urls=[],
    )
    return spec, prog.opt("--session-key", default="x-user-id") or "x-user-id"


def declared_port(container: Obj) -> int | None:
    for p in container.get("ports") or []:
        if isinstance(p, dict) and p.get("containerPort"):
            return int(p["containerPort"])
    return None
