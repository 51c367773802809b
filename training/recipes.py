"""What each recipe is by default: its image, the kind it is submitted as, and its hang-detection rule.

The rules use the operator's own `logMonitoringConfiguration` fields. Each matches the line the
recipe's rank 0 prints once per logged step (the HyperPod elastic agent applies `re.match`), so a job
that stops printing progress is marked hanging and restarted within its budget instead of burning GPU
hours silently.
"""

from __future__ import annotations

from .models import JobKind, Recipe

TORCH_IMAGE = "public.ecr.aws/t5u4s6i0/hypd-training-op-torch26-pub:v0110"
VERL_IMAGE = "public.ecr.aws/t5u4s6i0/hypd-verl-torch28-pub:v1217a"

DEFAULT_IMAGE = {
    Recipe.PYTORCH: TORCH_IMAGE,
    Recipe.LLAMA_FACTORY: TORCH_IMAGE,
    Recipe.MS_SWIFT: TORCH_IMAGE,
    Recipe.VERL: VERL_IMAGE,
}

KIND = {
    Recipe.PYTORCH: JobKind.HYPERPOD,
    Recipe.LLAMA_FACTORY: JobKind.HYPERPOD,
    Recipe.MS_SWIFT: JobKind.HYPERPOD,
    Recipe.VERL: JobKind.RAY,
}

# The feature each kind needs (features.gate names).
FEATURE = {JobKind.HYPERPOD: "training_operator", JobKind.RAY: "kuberay"}

# A first step may take a while (model download, compile); after it, a step line is due every few minutes.
_PROGRESS = {"expectedStartCutOffInSeconds": 1800, "expectedRecurringFrequencyInSeconds": 600}

DEFAULT_HANG_DETECTION = {
    # The FSDP example's `… __main__: Batch N Loss: …` (optionally behind torchrun's `[default0]:` prefix).
    Recipe.PYTORCH: [{"name": "JobHang", "logPattern": r".*Batch \d+ Loss: .*", **_PROGRESS}],
    # HF Trainer's `{'loss': …}` dict, printed every logging_steps.
    Recipe.LLAMA_FACTORY: [{"name": "JobHang", "logPattern": r".*\{'loss': .*", **_PROGRESS}],
    Recipe.MS_SWIFT: [{"name": "JobHang", "logPattern": r".*\{'loss': .*", **_PROGRESS}],
    # VERL's console logger `step:N - …`; KubeRay has no log monitoring, so the rule is kept for the record.
    Recipe.VERL: [{"name": "JobHang", "logPattern": r".*step:\d+ - .*", **_PROGRESS}],
}

# The operator's recovery defaults of the original templates.
RESTART_POLICY = {"numRestartBeforeFullJobRestart": 3, "evalPeriodSeconds": 21600, "maxFullJobRestarts": 1}
DEFAULT_MAX_RETRIES = 5

# LLaMA-Factory refuses a training config without these.
LLAMA_FACTORY_REQUIRED_KEYS = ("model_name_or_path", "stage", "dataset", "output_dir")
MS_SWIFT_COMMANDS = ("sft", "pt", "rlhf", "infer", "export", "eval")
MS_SWIFT_TRAINING = ("sft", "pt", "rlhf")

MOUNTS = {"s3": "/s3", "fsx": "/fsx"}
