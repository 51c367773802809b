"""Which program a training container runs is read from its command, args and env as a person reads a
manifest — never from a sandbox-only hint."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.kube.trainers import recognise


@pytest.mark.parametrize(
    ("container", "kind", "launcher", "target"),
    [
        (
            {"command": ["torchrun", "--nproc-per-node=8", "/s3/train.py", "--max_steps", "10"]},
            "pytorch",
            "torchrun",
            "/s3/train.py",
        ),
        (
            {
                "command": ["bash", "-c"],
                "args": ["cd /ws && pip install -r req.txt && hyperpodrun --nnodes=$NNODES --tee=3 /fsx/fsdp/train.py"],
            },
            "pytorch",
            "hyperpodrun",
            "/fsx/fsdp/train.py",
        ),
        (
            {"command": ["python", "-m", "torch.distributed.run", "--nnodes", "2", "train.py"]},
            "pytorch",
            "torchrun",
            "train.py",
        ),
        (
            {"command": ["llamafactory-cli", "train", "/s3/cfg/sft.yaml", "learning_rate=2e-5"]},
            "llama_factory",
            "llamafactory-cli",
            "/s3/cfg/sft.yaml",
        ),
        (
            {"command": ["hyperpodrun", "--tee=3", "/ws/LLaMA-Factory/src/llamafactory/launcher.py", "/s3/cfg.yaml"]},
            "llama_factory",
            "hyperpodrun",
            "/s3/cfg.yaml",
        ),
        ({"command": ["swift", "rlhf", "--rlhf_type", "dpo", "--model", "Qwen/Qwen2.5-7B"]}, "ms_swift", "swift", ""),
        (
            {"command": ["hyperpodrun", "--tee=3", "-m", "swift.cli.sft", "--model", "m"]},
            "ms_swift",
            "hyperpodrun",
            "swift.cli.sft",
        ),
        (
            {"command": ["python3", "-m", "verl.trainer.main_ppo", "trainer.nnodes=2"]},
            "verl",
            "python",
            "verl.trainer.main_ppo",
        ),
        (
            {"env": [{"name": "LMF_RECIPE_YAML_FILE", "value": "/s3/lmf.yaml"}]},
            "llama_factory",
            "hyperpodrun",
            "/s3/lmf.yaml",
        ),
        ({"env": [{"name": "MSSWIFT_COMMAND_TYPE", "value": "swift sft"}]}, "ms_swift", "hyperpodrun", ""),
        ({"env": [{"name": "TORCH_RECIPE_PY_PATH", "value": "/s3/t.py"}]}, "pytorch", "hyperpodrun", "/s3/t.py"),
    ],
)
def test_programs_are_recognised_from_command_args_and_env(
    container: dict[str, Any], kind: str, launcher: str, target: str
) -> None:
    found = recognise(container)
    assert found is not None and (found.kind, found.launcher, found.target) == (kind, launcher, target)


def test_options_and_overrides_are_read() -> None:
    found = recognise({"command": ["swift", "sft", "--max_steps", "30", "--logging_steps=3", "--use_hf"]})
    assert found is not None and found.subcommand == "sft"
    assert found.overrides == {"max_steps": "30", "logging_steps": "3", "use_hf": "true"}
    lf = recognise({"command": ["llamafactory-cli", "train", "x.yaml", "max_steps=5", "report_to=none"]})
    assert lf is not None and lf.overrides == {"max_steps": "5", "report_to": "none"}


@pytest.mark.parametrize(
    "container",
    [
        {"command": ["nginx", "-g", "daemon off;"]},
        {"command": ["sleep", "3600"]},
        {"image": "busybox"},
        {"command": ["python"]},
    ],
)
def test_other_programs_are_not_training(container: dict[str, Any]) -> None:
    assert recognise(container) is None
