"""MS-Swift 3.x (`swift sft|pt|rlhf --model … --dataset …`, or `-m swift.cli.sft` under a launcher):
`[INFO:swift] …` lines, then per logging step its dict with `loss`, `grad_norm`, `learning_rate`,
`token_acc`, `epoch`, `global_step/max_steps`, `percentage`, `elapsed_time`, `remaining_time`,
`memory(GiB)` and `train_speed(iter/s)` (RLHF/DPO adds rewards/* and logps/*)."""

from __future__ import annotations

import time
from typing import Any

from .program import Line, Program, _float, _int, duration


class MsSwift(Program):
    kind = "ms_swift"
    startup_s = 60.0
    default_logging_steps = 5  # ms-swift's own default

    def configure(self) -> None:
        o = self.o
        self.model = o.get("model", o.get("model_id_or_path", "Qwen/Qwen2.5-7B-Instruct"))
        self.train_type = o.get("train_type", "lora")
        self.lora = self.train_type == "lora"
        self.params_b = 7.6 if "72" not in self.model else 72.7
        self.per_device = _int(o.get("per_device_train_batch_size"), 1)
        self.grad_accum = _int(o.get("gradient_accumulation_steps"), 16)
        self.global_batch = self.per_device * self.grad_accum * self.world
        self.seq_len = _int(o.get("max_length"), 2048)
        self.epochs = _float(o.get("num_train_epochs"), 1.0)
        self.save_steps = _int(o.get("save_steps"), 500)
        base = o.get("output_dir", "output")
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(float(self.spec.get("t0") or time.time())))
        self.run_dir = f"{base}/v{self.attempt}-{stamp}"
        self.rlhf = self.subcommand == "rlhf"
        if self.rlhf:
            self.loss_start, self.loss_floor = 0.693, 0.35  # DPO starts at ln 2
        else:
            self.loss_start, self.loss_floor = 1.95, 0.72

    @property
    def lr_max(self) -> float:
        return _float(self.o.get("learning_rate"), 1e-4 if self.lora else 1e-5)

    def mlflow_enabled(self) -> bool:
        return super().mlflow_enabled() and self.o.get("report_to", "mlflow") not in ("none", "wandb", "tensorboard")

    def mlflow_run_name(self, t0: float) -> str:
        return self.o.get("run_name") or self.run_dir

    def _info(self, msg: str) -> str:
        return f"[INFO:swift] {msg}"

    def startup(self, t0: float) -> list[Line]:
        out: list[Line] = [(0.5, x) for x in self.elastic_lines(self.at(0.5))]
        for local in self.local_ranks():
            gr = self.global_rank(local)
            out.append(
                (
                    5.0,
                    self.tee(
                        local,
                        self._info(
                            f"rank: {gr}, local_rank: {local}, world_size: {self.world}, local_world_size: {self.nproc}"
                        ),
                    ),
                )
            )
        out += [(25.0 + 0.1 * i, x) for i in self.local_ranks() for x in self.nccl_lines(self.at(25), i)]
        if not self.reports():
            return out
        total = int(self.params_b * 1e9)
        trainable = 20_185_088 if self.lora else total
        rows = int(self.total_steps / max(self.epochs, 0.01) * self.global_batch)
        r0 = [
            (
                1.0,
                "[INFO:swift] Successfully registered "
                "`/usr/local/lib/python3.12/site-packages/swift/llm/dataset/data/dataset_info.json`.",
            ),
            (6.0, self._info(f"Loading the model using model_dir: {self.model}")),
            (6.1, self._info("Setting torch_dtype: torch.bfloat16")),
            (6.2, self._info(f"output_dir: {self.run_dir}")),
            (6.3, self._info("Global seed set to 42")),
            (20.0, self._info("model_kwargs: {'device_map': 'cuda:0'}")),
            (
                45.0,
                self._info(
                    f"model_parameter_info: PeftModelForCausalLM: {total / 1e6 + trainable / 1e6:.4f}M Params "
                    f"({trainable / 1e6:.4f}M Trainable [{100 * trainable / (total + trainable):.4f}%]), "
                    "0.0001M Buffers."
                ),
            ),
            (50.0, self._info("train_dataset: Dataset({")),
            (50.0, "    features: ['input_ids', 'labels', 'length'],"),
            (50.0, f"    num_rows: {rows}"),
            (50.0, "})"),
            (58.0, self._info(f"The TrainArguments will be saved in: {self.run_dir}/args.json")),
            (59.0, self._info(f"The logging file will be saved in: {self.run_dir}/logging.jsonl")),
        ]
        return out + [(off, self.tee(0, x)) for off, x in r0]

    def _common(self, step: int) -> dict[str, Any]:
        elapsed = step * self.step_s
        return {
            "epoch": round(step / max(self.total_steps / max(self.epochs, 0.01), 1.0), 2),
            "global_step/max_steps": f"{step}/{self.total_steps}",
            "percentage": f"{100 * step / self.total_steps:.2f}%",
            "elapsed_time": duration(elapsed),
            "remaining_time": duration((self.total_steps - step) * self.step_s),
            "memory(GiB)": round(min(self.accel.memory_gib * 0.31 + 0.01 * step, self.accel.memory_gib - 1), 2),
            "train_speed(iter/s)": round(1.0 / self.step_s * (1 + 0.02 * self.throughput_jitter(step) - 0.02), 6),
        }

    def _values(self, step: int) -> dict[str, Any]:
        values: dict[str, Any] = {
            "loss": round(self.loss(step), 8),
            "grad_norm": round(self.grad_norm(step), 8),
            "learning_rate": float(f"{self.lr(step):.4g}"),
        }
        if self.rlhf:
            margin = max(0.0, 0.693 - self.loss(step)) * 4
            values.update(
                {
                    "rewards/chosen": round(0.4 * margin, 8),
                    "rewards/rejected": round(-0.6 * margin, 8),
                    "rewards/accuracies": round(min(0.5 + margin / 3, 0.98), 8),
                    "rewards/margins": round(margin, 8),
                    "logps/chosen": round(-320.0 + 2 * step, 4),
                    "logps/rejected": round(-350.0 - 3 * step, 4),
                }
            )
        else:
            values["token_acc"] = round(min(0.55 + 0.35 * (1 - self.loss(step) / self.loss_start), 0.97), 8)
        return values

    def step_lines(self, step: int, t: float) -> list[str]:
        if not self.reports():
            return []
        out = []
        if step % self.logging_steps == 0 or step == 1:
            out.append(self.tee(0, str({**self._values(step), **self._common(step)})))
        if step % self.save_steps == 0:
            out.append(self.tee(0, self._info(f"Saving model checkpoint to {self.run_dir}/checkpoint-{step}")))
        return out

    def metrics(self, step: int) -> dict[str, float]:
        if step % self.logging_steps and step != 1:
            return {}
        common = self._common(step)
        return {
            **self._values(step),
            "epoch": common["epoch"],
            "memory(GiB)": common["memory(GiB)"],
            "train_speed(iter/s)": common["train_speed(iter/s)"],
        }

    def final_metrics(self) -> dict[str, float]:
        rt = self.total_steps * self.step_s
        losses = [self.loss(s) for s in range(1, self.total_steps + 1)]
        return {
            "train_runtime": round(rt, 4),
            "train_samples_per_second": round(self.total_steps * self.global_batch / rt, 3),
            "train_steps_per_second": round(self.total_steps / rt, 3),
            "train_loss": round(sum(losses) / max(len(losses), 1), 8),
        }

    def finish_lines(self, t: float, code: int) -> list[str]:
        if code:
            return self.crash_lines(t, code)
        if not self.reports():
            return self.elastic_done_lines(t)
        last = f"{self.run_dir}/checkpoint-{self.total_steps}"
        final = {**self.final_metrics(), **self._common(self.total_steps)}
        final["remaining_time"] = "0s"
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + f".{int(t * 1e6) % 1_000_000:06d}"
        lines = [
            self._info(f"Saving model checkpoint to {last}"),
            str(final),
            self._info(f"last_model_checkpoint: {last}"),
            self._info("best_model_checkpoint: None"),
            self._info(f"images_dir: {self.run_dir}/images"),
            self._info(f"End time of running main: {stamp}"),
        ]
        return [self.tee(0, x) for x in lines] + self.elastic_done_lines(t)

    def mlflow_params(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "train_type": self.train_type,
            "learning_rate": self.lr_max,
            "per_device_train_batch_size": self.per_device,
            "gradient_accumulation_steps": self.grad_accum,
            "max_length": self.seq_len,
            "num_train_epochs": self.epochs,
            "world_size": self.world,
            "output_dir": self.run_dir,
        }
