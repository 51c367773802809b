"""The common shape of a simulated training program: startup lines spread over its startup time, one
optimizer step every `step_s` simulated seconds (lines and metrics on logging steps), completion lines.

A program is rebuilt from its `spec` (a JSON-able dict kept in the pod's sim state) whenever it is
needed, so everything here is a pure function of (spec, step): a restarted sandbox continues the run
where it was. Curves are deterministic per job: loss falls towards a floor with a little noise, the
learning rate warms up then follows a cosine, throughput follows the GPU type and node count.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from .hardware import accelerator, tokens_per_second

Line = tuple[float, str]  # (offset in simulated seconds from the program start, text)

DEFAULT_RUN_SECONDS = 300.0  # simulated seconds a program runs when nothing says how many steps


def noise(seed: int, step: int, salt: str = "") -> float:
    """Deterministic noise in [-1, 1]."""
    h = hashlib.blake2b(f"{seed}/{step}/{salt}".encode(), digest_size=4).digest()
    return int.from_bytes(h, "big") / 0xFFFFFFFF * 2.0 - 1.0


def seed_of(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)


# ---- how programs print time ------------------------------------------------------------------
def asctime(t: float) -> str:
    """Python logging's default `%(asctime)s`: 2025-05-15 07:26:19,308"""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + f",{int(t * 1000) % 1000:03d}"


def short_time(t: float) -> str:
    """2025-05-15 07:26:19 (LLaMA-Factory's own logger)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def glog(level: str, t: float, pid: int, where: str, msg: str) -> str:
    """glog-style lines of torch.distributed.elastic: I0515 07:26:19.308000 140 torch/...py:793] msg"""
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(t)) + f".{int(t * 1e6) % 1_000_000:06d}"
    return f"{level}{stamp} {pid} {where}] {msg}"


def duration(seconds: float) -> str:
    """ms-swift's elapsed/remaining format: 1h 7m 30s, 5m 28s, 43s."""
    s = int(round(max(seconds, 0)))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h {m}m {sec}s"
    if m:
        return f"{m}m {sec}s"
    return f"{sec}s"


def hms(seconds: float) -> str:
    """HF's train_runtime in metrics blocks: 0:04:06.24"""
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}.{int((seconds - whole) * 100):02d}"


def num(x: float) -> str:
    """A float as Python repr()s it inside a dict (what HF Trainer prints)."""
    return repr(float(x))


def _float(v: Any, default: float) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def _int(v: Any, default: int) -> int:
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return default


class Program:
    """Base class; subclasses set the recipe's lines and metrics."""

    kind = ""
    startup_s = 40.0  # simulated seconds from process start to the first step
    finish_s = 4.0
    default_logging_steps = 1
    lora = False
    seq_len = 2048
    loss_start, loss_floor = 2.0, 0.7

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        launch = spec.get("launch") or {}
        self.launcher = str(launch.get("launcher", ""))
        self.target = str(launch.get("target", ""))
        self.subcommand = str(launch.get("subcommand", ""))
        self.options: dict[str, str] = dict(launch.get("options") or {})
        self.o: dict[str, str] = dict(launch.get("overrides") or {})
        self.env: dict[str, str] = dict(spec.get("env") or {})
        self.job = str(spec.get("job", ""))
        self.pod = str(spec.get("pod", self.job))
        self.rank = int(spec.get("rank", 0))  # node rank (the pod's index in the job)
        self.nnodes = max(int(spec.get("nnodes", 1)), 1)
        self.nproc = max(int(spec.get("nproc", 1)), 1)
        self.world = self.nnodes * self.nproc
        self.itype = str(spec.get("itype") or "ml.p5.48xlarge")
        self.efa = int(spec.get("efa", 0))
        self.seed = int(spec.get("seed") or seed_of(self.job))
        self.attempt = int(spec.get("attempt", 0))
        self.t0 = float(spec.get("t0") or time.time())
        self.speedup = max(float(spec.get("speedup") or 1.0), 1e-6)
        self.pid = 100 + self.seed % 900
        self.accel = accelerator(self.itype)
        self.configure()
        tps = tokens_per_second(self.itype, self.params_b, self.world, self.nnodes, self.efa > 0, self.lora)
        self.tokens_per_s = tps
        self.step_s = min(max(self.tokens_per_step / tps, 0.5), 600.0)
        self.total_steps = self.planned_steps()
        self.logging_steps = max(_int(self.o.get("logging_steps"), self.default_logging_steps), 1)

    # ---- what subclasses adjust -------------------------------------------------------------
    params_b = 8.0
    global_batch = 256  # sequences per optimizer step

    def configure(self) -> None:
        """Read the recipe's own options (model, batch size, lr, ...) from self.o."""

    @property
    def tokens_per_step(self) -> float:
        return self.global_batch * self.seq_len

    def explicit_steps(self) -> int | None:
        """Total steps the command line fixes (max_steps and the like), if any."""
        v = _int(self.o.get("max_steps"), -1)
        return v if v > 0 else None

    def planned_steps(self) -> int:
        """The command line's step count, else as many steps as fit the run time (the sandbox
        annotation, or DEFAULT_RUN_SECONDS). With both, steps keep their count and take the time."""
        explicit = self.explicit_steps()
        run_s = self.spec.get("run_s")
        if explicit and run_s is None:
            return explicit
        budget = max(_float(run_s, DEFAULT_RUN_SECONDS) - self.startup_s - self.finish_s, 1.0)
        if explicit:
            self.step_s = budget / explicit
            return explicit
        return max(int(budget / self.step_s), 1)

    def at(self, offset: float) -> float:
        """The wall time of a moment `offset` simulated seconds after the process started."""
        return self.t0 + offset / self.speedup

    def run_seconds(self) -> float:
        return self.startup_s + self.total_steps * self.step_s + self.finish_s

    def step_offset(self, step: int) -> float:
        return self.startup_s + step * self.step_s

    def reports(self) -> bool:
        """Whether this process is the one that prints progress and logs to MLflow (global rank 0)."""
        return self.rank == 0

    # ---- curves -------------------------------------------------------------------------------
    @property
    def lr_max(self) -> float:
        return _float(self.o.get("learning_rate", self.o.get("lr")), 1e-4)

    def lr(self, step: int) -> float:
        warm = max(int(self.total_steps * 0.1), 1)
        if step <= warm:
            return self.lr_max * step / warm
        frac = (step - warm) / max(self.total_steps - warm, 1)
        return self.lr_max * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0)))

    def loss(self, step: int) -> float:
        tau = max(self.total_steps / 3.0, 3.0)
        base = self.loss_floor + (self.loss_start - self.loss_floor) * math.exp(-step / tau)
        return max(base * (1 + 0.025 * noise(self.seed + self.attempt, step, "loss")), 0.0001)

    def grad_norm(self, step: int) -> float:
        base = 0.35 + 1.6 * math.exp(-step / max(self.total_steps / 4.0, 2.0))
        return base * (1 + 0.3 * noise(self.seed, step, "gn"))

    def throughput_jitter(self, step: int) -> float:
        return 1 + 0.03 * noise(self.seed, step, "tps")

    # ---- output -------------------------------------------------------------------------------
    def startup(self, t0: float) -> list[Line]:
        """Lines from process start to the first step; `t0` is the wall time of the start."""
        return []

    def step_lines(self, step: int, t: float) -> list[str]:
        return []

    def metrics(self, step: int) -> dict[str, float]:
        """Values logged to MLflow at a logging step (reporting process only)."""
        return {}

    def final_metrics(self) -> dict[str, float]:
        return {}

    def finish_lines(self, t: float, code: int) -> list[str]:
        return []

    def crash_error(self) -> str:
        """The exception a failing run of this program ends with."""
        return (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            f"{self.accel.memory_gib - 0.3:.2f} GiB of which 1.06 GiB is free."
        )

    def crash_lines(self, t: float, code: int) -> list[str]:
        """What is printed when the process dies with `code` (nothing for SIGKILL: 137)."""
        if code == 137:
            return []
        return self.child_failed_lines(t, code, self.crash_error())

    def restart_lines(self, t: float) -> list[str]:
        """The launcher's lines when the operator restarts the processes in place."""
        return self.agent_restart_lines(t)

    def mlflow_enabled(self) -> bool:
        return bool(self.env.get("MLFLOW_TRACKING_URI"))

    def mlflow_experiment(self) -> str:
        return self.env.get("MLFLOW_EXPERIMENT_NAME") or "Default"

    def mlflow_run_name(self, t0: float) -> str:
        return f"{self.job}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(t0))}"

    def mlflow_params(self) -> dict[str, Any]:
        return {
            "learning_rate": self.lr_max,
            "world_size": self.world,
            "nnodes": self.nnodes,
            "nproc_per_node": self.nproc,
            "max_steps": self.total_steps,
        }

    # ---- pieces several programs print -------------------------------------------------------
    def local_ranks(self) -> range:
        return range(self.nproc)

    def global_rank(self, local: int) -> int:
        return self.rank * self.nproc + local

    def tee(self, local: int, line: str) -> str:
        """torchrun/hyperpodrun with --tee prefix each worker line with its local rank."""
        if self.launcher in ("torchrun", "hyperpodrun") and self.options.get("tee"):
            return f"[default{local}]:{line}"
        return line

    def nccl_lines(self, t: float, local: int) -> list[str]:
        level = (self.env.get("NCCL_DEBUG") or "").upper()
        host = self.pod
        pid = self.pid + 10 + local
        prefix = f"{host}:{pid}:{pid} [{local}] NCCL INFO"
        version = "NCCL version 2.21.5+cuda12.4"
        if level not in ("INFO", "TRACE", "DEBUG"):
            return [self.tee(local, version)] if level == "VERSION" and self.global_rank(local) == 0 else []
        ip = self.spec.get("pod_ip", "10.1.0.10")
        lines = [f"{prefix} Bootstrap : Using eth0:{ip}<0>"]
        if self.efa > 0:
            lines += [
                f"{prefix} NET/Plugin: Loaded net plugin Libfabric (v9)",
                f"{prefix} NET/OFI Initializing aws-ofi-nccl 1.13.2-aws",
                f"{prefix} NET/OFI Using Libfabric version 1.22",
                f"{prefix} NET/OFI Selected provider is efa, fabric is efa-direct (found {self.efa} nics)",
                f"{prefix} Using network Libfabric",
            ]
        else:
            lines += [f"{prefix} NET/Socket : Using [0]eth0:{ip}<0>", f"{prefix} Using network Socket"]
        if self.global_rank(local) == 0:
            lines.insert(1, version)
        gr = self.global_rank(local)
        comm = f"comm 0x{(self.seed * 7919 + local) % 0xFFFFFFFFFF:x} rank {gr} nranks {self.world} cudaDev {local}"
        lines += [f"{prefix} {comm} nvmlDev {local} - Init START", f"{prefix} {comm} nvmlDev {local} - Init COMPLETE"]
        return [self.tee(local, x) for x in lines]

    def elastic_lines(self, t: float) -> list[str]:
        """torch.distributed.run's banner and (LOGLEVEL=INFO) its rendezvous report."""
        if self.launcher not in ("torchrun", "hyperpodrun"):
            return []
        where = "torch/distributed/run.py:792"
        lines: list[str] = []
        level = (self.options.get("server_log_level") or self.env.get("SERVER_LOG_LEVEL") or "info").lower()
        if self.launcher == "hyperpodrun" and level in ("debug", "info"):
            port = self.options.get("server_port", "8080")
            lines += [  # the HyperPod elastic agent's own server, which the operator talks to
                "INFO:     Started server process [1]",
                "INFO:     Waiting for application startup.",
                "INFO:     Application startup complete.",
                f"INFO:     Uvicorn running on http://{self.options.get('server_host', '0.0.0.0')}:{port} "
                "(Press CTRL+C to quit)",
            ]
        if self.nproc > 1:
            lines += [
                glog("W", t, 1, where, ""),
                glog("W", t, 1, where, "*****************************************"),
                glog(
                    "W",
                    t,
                    1,
                    where,
                    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid "
                    "your system being overloaded, please further tune the variable for optimal performance in "
                    "your application as needed. ",
                ),
                glog("W", t, 1, where, "*****************************************"),
            ]
        if (self.env.get("LOGLEVEL") or "").upper() != "INFO":
            return lines
        api = "torch/distributed/elastic/agent/server/api.py"
        master = self.spec.get("master", self.pod)
        ranks = [self.global_rank(i) for i in self.local_ranks()]
        lines += [
            glog("I", t, 1, "torch/distributed/launcher/api.py:194", "Starting elastic_operator with launch configs:"),
            f"  entrypoint       : {self.target or 'python'}",
            f"  min_nodes        : {self.nnodes}",
            f"  max_nodes        : {self.nnodes}",
            f"  nproc_per_node   : {self.nproc}",
            f"  run_id           : {self.options.get('rdzv_id', 'none')}",
            f"  rdzv_backend     : {self.options.get('rdzv_backend', 'static')}",
            f"  rdzv_endpoint    : {self.options.get('rdzv_endpoint', f'{master}:23456')}",
            "  rdzv_configs     : {'rank': " + str(self.rank) + ", 'timeout': 900}",
            "  max_restarts     : 0",
            "  monitor_interval : 0.1",
            f"  log_dir          : {self.options.get('log_dir', '/tmp/torchelastic')}",
            "  metrics_cfg      : {}",
            "",
            glog("I", t, 1, f"{api}:860", "[default] starting workers for entrypoint: python"),
            glog("I", t, 1, f"{api}:677", "[default] Rendezvous'ing worker group"),
            glog("I", t, 1, f"{api}:525", "[default] Rendezvous complete for workers. Result:"),
            "  restart_count=0",
            f"  master_addr={master}",
            "  master_port=23456",
            f"  group_rank={self.rank}",
            f"  group_world_size={self.nnodes}",
            f"  local_ranks={list(self.local_ranks())}",
            f"  role_ranks={ranks}",
            f"  global_ranks={ranks}",
            f"  role_world_sizes={[self.world] * self.nproc}",
            f"  global_world_sizes={[self.world] * self.nproc}",
            "",
            glog("I", t, 1, f"{api}:685", "[default] Starting worker group"),
        ]
        return lines

    def elastic_done_lines(self, t: float) -> list[str]:
        if self.launcher not in ("torchrun", "hyperpodrun") or (self.env.get("LOGLEVEL") or "").upper() != "INFO":
            return []
        api = "torch/distributed/elastic/agent/server/api.py"
        return [
            glog(
                "I",
                t,
                1,
                f"{api}:879",
                "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.",
            ),
            glog(
                "I",
                t,
                1,
                f"{api}:932",
                "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
            ),
            glog(
                "I",
                t,
                1,
                f"{api}:946",
                f"Done waiting for other agents. Elapsed: {0.0012 + self.rank * 0.0003:.6f} seconds",
            ),
        ]

    def child_failed_lines(self, t: float, code: int, error: str) -> list[str]:
        """A worker process died: its traceback, then torch elastic's ChildFailedError report."""
        script = self.target or "train.py"
        lines = [
            self.tee(0, f"[rank{self.global_rank(0)}]: Traceback (most recent call last):"),
            self.tee(0, f'[rank{self.global_rank(0)}]:   File "{script}", line 281, in <module>'),
            self.tee(0, f"[rank{self.global_rank(0)}]:     main(args)"),
            self.tee(0, f"[rank{self.global_rank(0)}]: {error}"),
        ]
        if self.launcher not in ("torchrun", "hyperpodrun"):
            return lines
        stamp = time.strftime("%Y-%m-%d_%H:%M:%S", time.gmtime(t))
        return lines + [
            glog(
                "E",
                t,
                1,
                "torch/distributed/elastic/multiprocessing/api.py:869",
                f"failed (exitcode: {code}) local_rank: 0 (pid: {self.pid + 10}) of binary: /usr/bin/python3",
            ),
            "Traceback (most recent call last):",
            '  File "/usr/local/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "============================================================",
            f"{script} FAILED",
            "------------------------------------------------------------",
            "Failures:",
            "  <NO_OTHER_FAILURES>",
            "------------------------------------------------------------",
            "Root Cause (first observed failure):",
            "[0]:",
            f"  time      : {stamp}",
            f"  host      : {self.pod}",
            f"  rank      : {self.global_rank(0)} (local_rank: 0)",
            f"  exitcode  : {code} (pid: {self.pid + 10})",
            "  error_file: <N/A>",
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
            "============================================================",
        ]

    def agent_restart_lines(self, t: float) -> list[str]:
        """The HyperPod elastic agent (hyperpodrun) restarting its workers after the operator asked."""
        api = "torch/distributed/elastic/agent/server/api.py"
        return [
            glog("W", t, 1, f"{api}:738", "[default] Received restart request from the HyperPod training operator"),
            glog("I", t, 1, f"{api}:692", "[default] Stopping worker group"),
            glog("I", t, 1, f"{api}:677", "[default] Rendezvous'ing worker group"),
            glog("I", t, 1, f"{api}:685", "[default] Starting worker group"),
        ]
