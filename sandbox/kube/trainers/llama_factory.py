"""LLaMA-Factory (`llamafactory-cli train <yaml> [key=value …]`, or its launcher under torchrun/
hyperpodrun): its `[INFO|time] llamafactory.…:line >> …` lines, transformers' `[INFO|file:line] time >>`
lines, HF Trainer's `***** Running training *****` block, `{'loss': …, 'grad_norm': …,
'learning_rate': …, 'epoch': …}` per logging step and the closing `***** train metrics *****`.

The YAML itself is on the shared storage, which the sandbox does not read: hyperparameters come from
`key=value` overrides on the command line, else LLaMA-Factory's example defaults.
"""

from __future__ import annotations

import os
from typing import Any

from .program import Line, Program, _float, _int, hms, num, short_time

_HF_T = "%Y-%m-%d %H:%M:%S"


def _hf(t: float, where: str, msg: str, level: str = "INFO") -> str:
    import time as _t

    stamp = _t.strftime(_HF_T, _t.gmtime(t)) + f",{int(t * 1000) % 1000:03d}"
    return f"[{level}|{where}] {stamp} >> {msg}"


def _lf(t: float, where: str, msg: str, level: str = "INFO") -> str:
    return f"[{level}|{short_time(t)}] llamafactory.{where} >> {msg}"


class LlamaFactory(Program):
    kind = "llama_factory"
    startup_s = 70.0
    default_logging_steps = 5

    def configure(self) -> None:
        o = self.o
        self.model = o.get("model_name_or_path", "/s3/models/Meta-Llama-3-8B-Instruct")
        self.finetuning = o.get("finetuning_type", "lora")
        self.lora = self.finetuning == "lora"
        self.stage = o.get("stage", "sft")
        self.params_b = 8.0 if "70" not in self.model else 70.6
        self.per_device = _int(o.get("per_device_train_batch_size"), 1)
        self.grad_accum = _int(o.get("gradient_accumulation_steps"), 8)
        self.global_batch = self.per_device * self.grad_accum * self.world
        self.seq_len = _int(o.get("cutoff_len"), 2048)
        self.epochs = _float(o.get("num_train_epochs"), 3.0)
        self.output_dir = o.get("output_dir", "saves/llama3-8b/lora/sft")
        self.dataset = o.get("dataset", "alpaca_en_demo")
        self.save_steps = _int(o.get("save_steps"), 500)
        self.loss_start, self.loss_floor = 1.45, 0.62

    @property
    def lr_max(self) -> float:
        return _float(self.o.get("learning_rate"), 1e-4)

    @property
    def steps_per_epoch(self) -> float:
        return max(self.total_steps / max(self.epochs, 0.01), 1.0)

    @property
    def examples(self) -> int:
        return int(self.steps_per_epoch * self.global_batch)

    @property
    def trainable(self) -> int:
        return 20_971_520 if self.lora else int(self.params_b * 1e9 * 1.0064)

    def mlflow_enabled(self) -> bool:
        return super().mlflow_enabled() and self.o.get("report_to", "mlflow") not in ("none", "wandb", "tensorboard")

    def mlflow_run_name(self, t0: float) -> str:
        return self.o.get("run_name") or super().mlflow_run_name(t0)

    def startup(self, t0: float) -> list[Line]:
        out: list[Line] = []
        if self.launcher == "llamafactory-cli" and self.world > 1:
            master = self.spec.get("master", self.pod)
            out.append((0.0, _lf(t0, "cli:143", f"Initializing {self.nproc} distributed tasks at: {master}:29500")))
        out += [(0.5, x) for x in self.elastic_lines(self.at(0.5))]
        for local in self.local_ranks():
            out.append(
                (
                    6.0 + 0.05 * local,
                    self.tee(
                        local,
                        _lf(
                            self.at(6.0),
                            "hparams.parser:401",
                            f"Process rank: {self.global_rank(local)}, world size: {self.world}, device: cuda:{local}, "
                            f"distributed training: {self.world > 1}, compute dtype: torch.bfloat16",
                        ),
                    ),
                )
            )
        if not self.reports():
            return out + [(30.0 + 0.1 * i, x) for i in self.local_ranks() for x in self.nccl_lines(self.at(30), i)]
        tok = os.path.join(self.model, "tokenizer.json")
        arch = "Qwen2ForCausalLM" if "qwen" in self.model.lower() else "LlamaForCausalLM"
        r0 = [
            (
                8.0,
                _hf(self.at(8), "tokenization_utils_base.py:2060", f"loading file tokenizer.json from cache at {tok}"),
            ),
            (
                8.1,
                _hf(self.at(8.1), "tokenization_utils_base.py:2060", "loading file tokenizer.model from cache at None"),
            ),
            (9.0, _lf(self.at(9), "data.loader:143", f"Loading dataset {self.dataset}...")),
            (
                12.0,
                f"Running tokenizer on dataset (num_proc=16): 100%|██████████| {self.examples}/{self.examples} "
                f"[00:02<00:00, {self.examples / 2.0:.2f} examples/s]",
            ),
            (
                14.0,
                _hf(self.at(14), "configuration_utils.py:693", f"loading configuration file {self.model}/config.json"),
            ),
            (
                20.0,
                _hf(
                    self.at(20),
                    "modeling_utils.py:1124",
                    f"loading weights file {self.model}/model.safetensors.index.json",
                ),
            ),
            (
                20.1,
                _hf(
                    self.at(20.1),
                    "modeling_utils.py:2167",
                    f"Instantiating {arch} model under default dtype torch.bfloat16.",
                ),
            ),
        ]
        r0 += [(30.0 + 0.1 * i, x) for i in self.local_ranks() for x in self.nccl_lines(self.at(30), i)]
        r0 += [
            (
                52.0,
                _hf(
                    self.at(52),
                    "modeling_utils.py:4930",
                    f"All model checkpoint weights were used when initializing {arch}.",
                ),
            ),
            (53.0, _lf(self.at(53), "model.model_utils.checkpointing:143", "Gradient checkpointing enabled.")),
            (
                53.1,
                _lf(
                    self.at(53.1),
                    "model.model_utils.attention:143",
                    "Using torch SDPA for faster training and inference.",
                ),
            ),
            (53.2, _lf(self.at(53.2), "model.adapter:143", f"Fine-tuning method: {'LoRA' if self.lora else 'Full'}")),
            (
                54.0,
                _lf(
                    self.at(54),
                    "model.loader:143",
                    f"trainable params: {self.trainable:,} || all params: {int(self.params_b * 1e9 * 1.0064):,} || "
                    f"trainable%: {100 * self.trainable / (self.params_b * 1e9 * 1.0064):.4f}",
                ),
            ),
            (55.0, _hf(self.at(55), "trainer.py:748", "Using auto half precision backend")),
        ]
        block = [
            "***** Running training *****",
            f"  Num examples = {self.examples:,}",
            f"  Num Epochs = {int(self.epochs) if self.epochs == int(self.epochs) else self.epochs}",
            f"  Instantaneous batch size per device = {self.per_device}",
            f"  Total train batch size (w. parallel, distributed & accumulation) = {self.global_batch:,}",
            f"  Gradient Accumulation steps = {self.grad_accum}",
            f"  Total optimization steps = {self.total_steps:,}",
            f"  Number of trainable parameters = {self.trainable:,}",
        ]
        r0 += [(69.0, _hf(self.at(69), f"trainer.py:{2414 + i}", msg)) for i, msg in enumerate(block)]
        return out + [(off, self.tee(0, x)) for off, x in r0]

    def epoch(self, step: int) -> float:
        return round(step / self.steps_per_epoch, 2)

    def step_lines(self, step: int, t: float) -> list[str]:
        if not self.reports():
            return []
        out = []
        if step % self.logging_steps == 0:
            m = (self.loss(step), self.grad_norm(step), self.lr(step), self.epoch(step))
            out.append(
                self.tee(
                    0,
                    f"{{'loss': {round(m[0], 4)}, 'grad_norm': {num(m[1])}, 'learning_rate': {num(m[2])}, "
                    f"'epoch': {m[3]}}}",
                )
            )
        if step % self.save_steps == 0 and step < self.total_steps:
            out.append(
                self.tee(
                    0, _hf(t, "trainer.py:3984", f"Saving model checkpoint to {self.output_dir}/checkpoint-{step}")
                )
            )
        return out

    def metrics(self, step: int) -> dict[str, float]:
        if step % self.logging_steps:
            return {}
        return {
            "loss": round(self.loss(step), 4),
            "grad_norm": self.grad_norm(step),
            "learning_rate": self.lr(step),
            "epoch": self.epoch(step),
            "num_input_tokens_seen": float(step * self.tokens_per_step),
        }

    def _runtime(self) -> float:
        return self.total_steps * self.step_s

    def train_loss(self) -> float:
        return sum(self.loss(s) for s in range(1, self.total_steps + 1)) / max(self.total_steps, 1)

    def final_metrics(self) -> dict[str, float]:
        rt = self._runtime()
        return {
            "train_runtime": round(rt, 4),
            "train_samples_per_second": round(self.examples * self.epochs / rt, 3),
            "train_steps_per_second": round(self.total_steps / rt, 3),
            "total_flos": float(int(6 * self.params_b * 1e9 * self.total_steps * self.tokens_per_step)),
            "train_loss": self.train_loss(),
        }

    def finish_lines(self, t: float, code: int) -> list[str]:
        if code:
            return self.crash_lines(t, code)
        if not self.reports():
            return self.elastic_done_lines(t)
        f = self.final_metrics()
        lines = [
            _hf(t, "trainer.py:3984", f"Saving model checkpoint to {self.output_dir}/checkpoint-{self.total_steps}"),
            _hf(t, "trainer.py:2681", ""),
            "",
            "Training completed. Do not forget to share your model on huggingface.co/models =)",
            "",
            "",
            f"{{'train_runtime': {f['train_runtime']}, 'train_samples_per_second': {f['train_samples_per_second']}, "
            f"'train_steps_per_second': {f['train_steps_per_second']}, 'train_loss': {num(f['train_loss'])}, "
            f"'epoch': {float(round(self.epochs, 2))}}}",
            _hf(t, "trainer.py:3984", f"Saving model checkpoint to {self.output_dir}"),
            "***** train metrics *****",
            f"  epoch                    = {float(round(self.epochs, 2)):>10}",
            f"  total_flos               = {int(f['total_flos'] / 1e9):>9}GF",
            f"  train_loss               = {f['train_loss']:>10.4f}",
            f"  train_runtime            = {hms(f['train_runtime']):>10}",
            f"  train_samples_per_second = {f['train_samples_per_second']:>10}",
            f"  train_steps_per_second   = {f['train_steps_per_second']:>10}",
            f"Figure saved at: {self.output_dir}/training_loss.png",
            _lf(t, "extras.ploting:148", "No metric eval_loss to plot.", "WARNING"),
            _hf(t, "modelcard.py:450", "Dropping the following result as it does not have all the necessary fields:"),
            "{'task': {'name': 'Causal Language Modeling', 'type': 'text-generation'}}",
        ]
        return [self.tee(0, x) for x in lines] + self.elastic_done_lines(t)

    def mlflow_params(self) -> dict[str, Any]:
        return {
            "model_name_or_path": self.model,
            "stage": self.stage,
            "finetuning_type": self.finetuning,
            "learning_rate": self.lr_max,
            "per_device_train_batch_size": self.per_device,
            "gradient_accumulation_steps": self.grad_accum,
            "num_train_epochs": self.epochs,
            "max_steps": self.total_steps,
            "cutoff_len": self.seq_len,
            "world_size": self.world,
            "output_dir": self.output_dir,
        }
