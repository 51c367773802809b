"""VERL on Ray (`python3 -m verl.trainer.main_ppo key=value …`, the RayJob entrypoint): the Ray driver
connecting to the cluster, `(TaskRunner pid=…)` lines, validation, then per step its console logger's
`step:N - actor/… - critic/… - response_length/… - timing_s/… - perf/…` line and finally
`Final validation metrics`. It logs to MLflow only when `trainer.logger` includes mlflow, as VERL
does, under experiment `trainer.project_name` and run `trainer.experiment_name`."""

from __future__ import annotations

import math
from typing import Any

from .program import Line, Program, _float, _int, asctime


class Verl(Program):
    kind = "verl"
    startup_s = 150.0  # Ray workers, FSDP actor + vLLM rollout engines, initial validation
    default_logging_steps = 1

    def configure(self) -> None:
        o = self.o
        self.model = o.get("actor_rollout_ref.model.path", "/s3/Qwen-Qwen3-0.6B")
        self.params_b = 0.6 if "0.6" in self.model or "0_6" in self.model else 7.6 if "7" in self.model else 1.5
        self.batch = _int(o.get("data.train_batch_size"), 256)
        self.rollout_n = _int(o.get("actor_rollout_ref.rollout.n"), 5)
        self.max_response = _int(o.get("data.max_response_length"), 1024)
        self.max_prompt = _int(o.get("data.max_prompt_length"), 512)
        self.estimator = o.get("algorithm.adv_estimator", "grpo")
        self.test_freq = _int(o.get("trainer.test_freq"), 5)
        nodes = _int(o.get("trainer.nnodes"), 0)
        per_node = _int(o.get("trainer.n_gpus_per_node"), 0)
        if nodes and per_node:  # what the trainer was told, as VERL uses it
            self.nnodes, self.nproc, self.world = nodes, per_node, nodes * per_node
        self.global_batch = self.batch * self.rollout_n
        self.seq_len = self.max_prompt + self.max_response // 2
        self.loss_start, self.loss_floor = 0.04, -0.01

    def __init__(self, spec: dict[str, Any]) -> None:
        super().__init__(spec)
        # an RL step waits for the longest rollout: decoding is sequential (~25 ms a token), whatever the FLOPs
        self.step_s = max(self.step_s, self.max_response * 0.025 + 5.0)
        self.total_steps = self.planned_steps()

    def explicit_steps(self) -> int | None:
        steps = _int(self.o.get("trainer.total_training_steps"), 0)
        return steps or None

    @property
    def tokens_per_step(self) -> float:
        # rollout generation dominates an RL step: about 3x the cost of training on the same tokens
        return 3.0 * self.global_batch * self.seq_len

    @property
    def lr_max(self) -> float:
        return _float(self.o.get("actor_rollout_ref.actor.optim.lr"), 1e-6)

    def lr(self, step: int) -> float:
        return self.lr_max  # VERL's default actor schedule is constant

    def reward(self, step: int) -> float:
        target = 0.82 if "gsm8k" in " ".join(self.o.values()).lower() else 0.6
        return max(
            0.0,
            min(
                1.0,
                0.12
                + (target - 0.12) * (1 - math.exp(-step / max(self.total_steps / 3, 2.0)))
                + 0.03 * self._n(step, "r"),
            ),
        )

    def _n(self, step: int, salt: str) -> float:
        from .program import noise

        return noise(self.seed + self.attempt, step, salt)

    def mlflow_enabled(self) -> bool:
        return super().mlflow_enabled() and "mlflow" in self.o.get("trainer.logger", "")

    def mlflow_experiment(self) -> str:
        return self.o.get("trainer.project_name", "verl_examples")

    def mlflow_run_name(self, t0: float) -> str:
        return self.o.get("trainer.experiment_name", "gsm8k")

    def _tr(self, msg: str) -> str:
        return f"(TaskRunner pid={self.pid}) {msg}"

    def startup(self, t0: float) -> list[Line]:
        head = self.spec.get("head_ip", "10.1.0.10")
        steps = self.total_steps
        loader = max(steps // max(_int(self.o.get("trainer.total_epochs"), 1), 1), 1)
        val = self.reward(0)
        return [
            (
                0.0,
                f"{asctime(t0)}\tINFO worker.py:1554 -- Using address {head}:6379 set in the environment "
                "variable RAY_ADDRESS",
            ),
            (
                0.2,
                f"{asctime(self.at(0.2))}\tINFO worker.py:1694 -- Connecting to existing Ray cluster at "
                f"address: {head}:6379...",
            ),
            (
                0.5,
                f"{asctime(self.at(0.5))}\tINFO worker.py:1879 -- Connected to Ray cluster. View the dashboard at "
                f"\x1b[1m\x1b[32m{head}:8265 \x1b[39m\x1b[22m",
            ),
            (3.0, self._tr(f"TaskRunner hostname: {self.spec.get('head', 'head')}, PID: {self.pid}")),
            (5.0, self._tr("Using dataset class: RLHFDataset")),
            (6.0, self._tr(f"dataset len: {loader * self.batch}")),
            (6.1, self._tr(f"filter dataset len: {loader * self.batch}")),
            (8.0, self._tr(f"Size of train dataloader: {loader}, Size of val dataloader: 1")),
            (8.1, self._tr(f"Total training steps: {steps}")),
            (40.0, f"(WorkerDict pid={self.pid + 101}) NCCL version 2.27.3+cuda12.9"),
            (60.0, f"(WorkerDict pid={self.pid + 101}) INFO [__init__.py:235] Automatically detected platform cuda."),
            (120.0, self._tr("Checkpoint tracker file does not exist: checkpoints/latest_checkpointed_iteration.txt")),
            (120.1, self._tr("Training from scratch")),
            (145.0, self._tr("validation generation end")),
            (
                148.0,
                self._tr(
                    '("Initial validation metrics: '
                    f"{{'val-core/openai/gsm8k/reward/mean@1': np.float64({val:.4f})}}\")"
                ),
            ),
            (148.1, self._tr(f"step:0 - val-core/openai/gsm8k/reward/mean@1:{val:.4f}")),
        ]

    def values(self, step: int) -> dict[str, float]:
        n = self._n
        resp = min(
            self.max_response, 180 + 260 * (1 - math.exp(-step / max(self.total_steps / 2, 2))) + 20 * n(step, "len")
        )
        gen, upd = self.step_s * 0.62, self.step_s * 0.27
        tokens = self.global_batch * (self.max_prompt * 0.5 + resp)
        score = self.reward(step)
        vals: dict[str, float] = {
            "actor/entropy": max(0.05, 0.62 * math.exp(-step / max(self.total_steps, 4)) + 0.02 * n(step, "e")),
            "actor/pg_loss": self.loss(step) + 0.01 * n(step, "pg"),
            "actor/pg_clipfrac": abs(0.002 + 0.001 * n(step, "cf")),
            "actor/ppo_kl": abs(0.0005 * n(step, "kl")),
            "actor/kl_loss": 0.001 * step / max(self.total_steps, 1) + 0.0003 * abs(n(step, "kll")),
            "actor/grad_norm": self.grad_norm(step) * 0.4,
            "actor/lr": self.lr(step),
            "perf/mfu/actor": 0.18 + 0.02 * n(step, "mfu"),
            "training/global_step": float(step),
            "training/epoch": float(
                (step - 1) // max(self.total_steps // max(_int(self.o.get("trainer.total_epochs"), 1), 1), 1)
            ),
            "critic/score/mean": score,
            "critic/score/max": 1.0,
            "critic/score/min": 0.0,
            "critic/rewards/mean": score,
            "critic/advantages/mean": 0.001 * n(step, "adv"),
            "critic/returns/mean": 0.001 * n(step, "ret"),
            "response_length/mean": resp,
            "response_length/max": float(self.max_response),
            "response_length/clip_ratio": max(0.0, 0.02 + 0.01 * n(step, "clip")),
            "prompt_length/mean": self.max_prompt * 0.45,
            "timing_s/gen": gen,
            "timing_s/update_actor": upd,
            "timing_s/step": self.step_s * self.throughput_jitter(step),
            "perf/total_num_tokens": tokens,
            "perf/time_per_step": self.step_s,
            "perf/throughput": tokens / self.step_s / max(self.world, 1),
        }
        if self.estimator == "gae":
            vals["critic/vf_loss"] = 0.08 * math.exp(-step / max(self.total_steps / 3, 2)) + 0.005 * abs(n(step, "vf"))
        if self.test_freq and step % self.test_freq == 0:
            vals["val-core/openai/gsm8k/reward/mean@1"] = self.reward(step) - 0.04
        return vals

    def step_lines(self, step: int, t: float) -> list[str]:
        parts = " - ".join(f"{k}:{_fmt(v)}" for k, v in self.values(step).items())
        return [self._tr(f"step:{step} - {parts}")]

    def metrics(self, step: int) -> dict[str, float]:
        return {k.replace("@", "_at_"): v for k, v in self.values(step).items()}

    def finish_lines(self, t: float, code: int) -> list[str]:
        if code:
            return self.crash_lines(t, code)
        val = self.reward(self.total_steps) - 0.04
        return [
            self._tr(
                f"(\"Final validation metrics: {{'val-core/openai/gsm8k/reward/mean@1': np.float64({val:.4f})}}\")"
            )
        ]

    def crash_lines(self, t: float, code: int) -> list[str]:
        return [
            "Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.12/site-packages/verl/trainer/main_ppo.py", line 42, in main',
            "    run_ppo(config)",
            "ray.exceptions.RayTaskError(RuntimeError): ray::TaskRunner.run() "
            f"(pid={self.pid}, ip={self.spec.get('head_ip', '10.1.0.10')})",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ]

    def mlflow_params(self) -> dict[str, Any]:
        return {
            "actor_rollout_ref.model.path": self.model,
            "algorithm.adv_estimator": self.estimator,
            "data.train_batch_size": self.batch,
            "actor_rollout_ref.rollout.n": self.rollout_n,
            "actor_rollout_ref.actor.optim.lr": self.lr_max,
            "trainer.nnodes": self.nnodes,
            "trainer.n_gpus_per_node": self.nproc,
            "trainer.total_training_steps": self.total_steps,
        }


def _fmt(v: float) -> str:
    """VERL's console logger prints numpy floats as Python does."""
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v)) if abs(v) >= 1 or v == 0 else repr(float(v))
    return repr(round(float(v), 6))
