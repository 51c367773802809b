"""A PyTorch training script under torchrun / hyperpodrun (or plain python): the launcher's banners,
NCCL/EFA initialisation per rank, then the script's own logging, modelled on the FSDP example the
HyperPod docs use (awsome-distributed-training `train.py`): `Batch N Loss: …, Speed: … samples/sec,
lr: …` from global rank 0, in Python logging's `%(asctime)s [%(levelname)s] %(name)s: ` format.
"""

from __future__ import annotations

import re
from typing import Any

from .program import Line, Program, _float, _int, asctime

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*[bB]\b")


class PyTorchScript(Program):
    kind = "pytorch"
    startup_s = 35.0
    loss_start, loss_floor = 10.8, 3.1  # from-scratch LM: ln(vocab) towards a few nats

    def configure(self) -> None:
        size = _SIZE.search(" ".join([self.o.get("model_size", ""), self.o.get("model_type", ""), self.target]))
        self.params_b = float(size.group(1)) if size else 8.0
        self.batch_per_rank = _int(self.o.get("train_batch_size", self.o.get("batch_size")), 2)
        self.global_batch = self.batch_per_rank * self.world
        self.seq_len = _int(self.o.get("max_context_width", self.o.get("seq_len")), 4096)
        self.default_logging_steps = _int(self.o.get("logging_freq"), 1)

    @property
    def lr_max(self) -> float:
        return _float(self.o.get("lr", self.o.get("learning_rate")), 1e-4)

    def _log(self, t: float, msg: str, level: str = "INFO") -> str:
        return self.tee(0, f"{asctime(t)} [{level}] __main__: {msg}")

    def startup(self, t0: float) -> list[Line]:
        out: list[Line] = [(0.0, x) for x in self.elastic_lines(t0)]
        for local in self.local_ranks():
            out += [(4.0 + 0.1 * local, x) for x in self.nccl_lines(self.at(4.0), local)]
        if not self.reports():
            return out
        n = int(self.params_b * 1e9 * 1.0037)
        out += [
            (8.0, self._log(self.at(8.0), "Creating Model with FSDP2")),
            (20.0, self._log(self.at(20.0), f"Created model with total parameters: {n} ({n * 1e-9:.2f} B)")),
            (28.0, self._log(self.at(28.0), "Wrapped model with FSDP2")),
            (30.0, self._log(self.at(30.0), "Created optimizer")),
        ]
        return out

    def samples_per_s(self, step: int) -> float:
        return self.tokens_per_s / self.seq_len * self.throughput_jitter(step)

    def step_lines(self, step: int, t: float) -> list[str]:
        batch = step - 1  # the script numbers batches from 0
        if not self.reports() or batch % self.logging_steps:
            return []
        return [
            self._log(
                t,
                f"Batch {batch} Loss: {self.loss(step):.5f}, Speed: {self.samples_per_s(step):.2f} samples/sec, "
                f"lr: {self.lr(step):.6f}",
            )
        ]

    def metrics(self, step: int) -> dict[str, float]:
        if (step - 1) % self.logging_steps:
            return {}
        return {"loss": self.loss(step), "throughput": self.samples_per_s(step), "learning_rate": self.lr(step)}

    def finish_lines(self, t: float, code: int) -> list[str]:
        if code:
            return self.crash_lines(t, code)
        out = []
        if self.reports() and self.o.get("checkpoint_dir"):
            out.append(self._log(t, f"Saving checkpoint to {self.o['checkpoint_dir']}/{self.total_steps}steps"))
        return out + self.elastic_done_lines(t)

    def crash_error(self) -> str:
        return (
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), "
            "NCCL version 2.21.5"
        )

    def mlflow_params(self) -> dict[str, Any]:
        return {**super().mlflow_params(), "script": self.target, "train_batch_size": self.batch_per_rank}
