"""Which training program a container runs, read from its command, args and env as a person would read
the manifest: `torchrun`/`hyperpodrun` + a script, `llamafactory-cli train <yaml>`, `swift sft|pt|rlhf
…`, `python3 -m verl.trainer.main_ppo …`, also inside `bash -c "cd … && …"`, and the env of the
original InstantStart recipe images (LMF_RECIPE_YAML_FILE, MSSWIFT_COMMAND_TYPE, TORCH_RECIPE_PY_PATH).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Any

PYTORCH, LLAMA_FACTORY, MS_SWIFT, VERL = "pytorch", "llama_factory", "ms_swift", "verl"
SWIFT_TRAINING = ("sft", "pt", "rlhf")
_SHELLS = {"sh", "bash", "dash", "zsh"}
_SEPARATORS = {"&&", "||", ";", "|", "&"}
# torchrun / hyperpodrun flags that take no value
_FLAGS = {
    "--standalone",
    "--no-python",
    "--no_python",
    "--run-path",
    "--run_path",
    "-m",
    "--module",
    "--inprocess-restart",
}


@dataclass
class Launch:
    """A recognised training program and how it was started."""

    kind: str  # PYTORCH | LLAMA_FACTORY | MS_SWIFT | VERL
    launcher: str  # torchrun | hyperpodrun | llamafactory-cli | swift | python | env
    target: str = ""  # script path, module, or config YAML
    subcommand: str = ""  # swift: sft / pt / rlhf
    options: dict[str, str] = field(default_factory=dict)  # launcher options (--nnodes, --tee, ...)
    overrides: dict[str, str] = field(default_factory=dict)  # the program's own options

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "launcher": self.launcher,
            "target": self.target,
            "subcommand": self.subcommand,
            "options": dict(self.options),
            "overrides": dict(self.overrides),
        }

    @property
    def tee(self) -> bool:
        """torchrun-style launchers prefix worker lines with `[default<rank>]:` when --tee is set."""
        return self.launcher in ("torchrun", "hyperpodrun") and bool(self.options.get("tee"))


def recognise(container: dict[str, Any]) -> Launch | None:
    """The training program a container runs, or None."""
    tokens = [str(t) for t in (container.get("command") or []) + (container.get("args") or [])]
    for cmd in reversed(_commands(tokens)):  # the last command of a `cd … && …` line is the program
        found = _program(cmd)
        if found is not None:
            return found
    return _from_env({e.get("name"): str(e.get("value", "")) for e in container.get("env") or [] if e.get("name")})


def _commands(tokens: list[str]) -> list[list[str]]:
    """Simple commands of an argv, unwrapping `bash -c "<script>"`."""
    if tokens and os.path.basename(tokens[0]) in _SHELLS:
        for i, t in enumerate(tokens[1:], 1):
            if t.startswith("-") and "c" in t[1:] and i + 1 < len(tokens):
                try:
                    tokens = shlex.split(tokens[i + 1], comments=True)
                except ValueError:
                    tokens = tokens[i + 1].split()
                break
    out: list[list[str]] = [[]]
    for t in tokens:
        if t in _SEPARATORS:
            out.append([])
        else:
            out[-1].append(t)
    return [c for c in out if c]


def _strip(cmd: list[str]) -> list[str]:
    """Drop `VAR=value` prefixes, `exec`, `env`, `time`, `nohup`."""
    i = 0
    while i < len(cmd) and (
        cmd[i] in ("exec", "env", "time", "nohup") or ("=" in cmd[i] and not cmd[i].startswith("-"))
    ):
        i += 1
    return cmd[i:]


def _program(cmd: list[str]) -> Launch | None:
    cmd = _strip(cmd)
    if not cmd:
        return None
    head = os.path.basename(cmd[0])
    if head in ("torchrun", "hyperpodrun"):
        return _after_launcher(head, cmd[1:])
    if head in ("deepspeed", "accelerate"):
        rest = cmd[2:] if head == "accelerate" and len(cmd) > 1 and cmd[1] == "launch" else cmd[1:]
        return _after_launcher("torchrun", rest)
    if head.startswith("python"):
        if len(cmd) > 2 and cmd[1] == "-m":
            module, rest = cmd[2], cmd[3:]
            if module == "torch.distributed.run":
                return _after_launcher("torchrun", rest)
            return _module(module, rest, "python")
        if len(cmd) > 1 and not cmd[1].startswith("-"):
            return _script(cmd[1], cmd[2:], "python")
        return None
    if head in ("llamafactory-cli", "lmf") and len(cmd) > 1 and cmd[1] == "train":
        target = cmd[2] if len(cmd) > 2 and not cmd[2].startswith("-") and "=" not in cmd[2] else ""
        return Launch(LLAMA_FACTORY, "llamafactory-cli", target, "train", overrides=_options(cmd[2 + bool(target) :]))
    if head == "swift" and len(cmd) > 1 and cmd[1] in SWIFT_TRAINING:
        return Launch(MS_SWIFT, "swift", "", cmd[1], overrides=_options(cmd[2:]))
    return None


def _after_launcher(launcher: str, rest: list[str]) -> Launch | None:
    options: dict[str, str] = {}
    i = 0
    while i < len(rest) and rest[i].startswith("-"):
        opt = rest[i]
        if opt in ("-m", "--module") and i + 1 < len(rest):
            found = _module(rest[i + 1], rest[i + 2 :], launcher)
            if found is not None:
                found.options.update(options)
            return found
        if "=" in opt:
            k, v = opt.split("=", 1)
            options[k.lstrip("-").replace("-", "_")] = v
        elif opt in _FLAGS or i + 1 >= len(rest):
            options[opt.lstrip("-").replace("-", "_")] = "true"
        else:
            options[opt.lstrip("-").replace("-", "_")] = rest[i + 1]
            i += 1
        i += 1
    if i >= len(rest):
        return None
    found = _script(rest[i], rest[i + 1 :], launcher)
    if found is not None:
        found.options.update(options)
    return found


def _module(module: str, rest: list[str], launcher: str) -> Launch | None:
    if module.startswith("verl.trainer.main_ppo") or module.startswith("verl.trainer.main_"):
        return Launch(VERL, launcher, module, overrides=_options(rest))
    if module.startswith("swift.cli."):
        sub = module.rsplit(".", 1)[-1]
        return Launch(MS_SWIFT, launcher, module, sub if sub in SWIFT_TRAINING else "sft", overrides=_options(rest))
    if module.startswith("llamafactory"):
        target = rest[0] if rest and rest[0].endswith((".yaml", ".yml", ".json")) else ""
        return Launch(LLAMA_FACTORY, launcher, target, "train", overrides=_options(rest[1:] if target else rest))
    return Launch(PYTORCH, launcher, module, overrides=_options(rest))


def _script(path: str, rest: list[str], launcher: str) -> Launch | None:
    name = path.replace("\\", "/")
    if "swift/cli/" in name:
        sub = os.path.splitext(os.path.basename(name))[0]
        return Launch(MS_SWIFT, launcher, path, sub if sub in SWIFT_TRAINING else "sft", overrides=_options(rest))
    if "llamafactory" in name.lower() or name.endswith("LLaMA-Factory/src/train.py"):
        target = rest[0] if rest and rest[0].endswith((".yaml", ".yml", ".json")) else ""
        return Launch(LLAMA_FACTORY, launcher, target, "train", overrides=_options(rest[1:] if target else rest))
    if not name.endswith(".py") and launcher == "python":
        return None
    return Launch(PYTORCH, launcher, path, overrides=_options(rest))


def _options(args: list[str]) -> dict[str, str]:
    """`--key value`, `--key=value` and Hydra/LLaMA-Factory style `key=value` options."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            if "=" in a:
                k, v = a[2:].split("=", 1)
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                k, v = a[2:], args[i + 1]
                i += 1
            else:
                k, v = a[2:], "true"
            out[k] = v
        elif "=" in a and not a.startswith("-"):
            k, v = a.split("=", 1)
            out[k.lstrip("+")] = v.strip("'\"")
        i += 1
    return out


def _from_env(env: dict[str, str]) -> Launch | None:
    """The original InstantStart recipe images: an entry script reads these and runs hyperpodrun --tee=3."""
    opts = {"tee": "3"}
    if env.get("LMF_RECIPE_YAML_FILE"):
        return Launch(LLAMA_FACTORY, "hyperpodrun", env["LMF_RECIPE_YAML_FILE"], "train", options=opts)
    if env.get("MSSWIFT_COMMAND_TYPE"):
        sub = env["MSSWIFT_COMMAND_TYPE"].split()[-1]
        return Launch(MS_SWIFT, "hyperpodrun", env.get("MSSWIFT_RECIPE_YAML_FILE", ""), sub, options=opts)
    if env.get("TORCH_RECIPE_PY_PATH"):
        params = env.get("TORCH_RECIPE_PY_PARAMS", "")
        try:
            extra = shlex.split(params)
        except ValueError:
            extra = params.split()
        return Launch(PYTORCH, "hyperpodrun", env["TORCH_RECIPE_PY_PATH"], options=opts, overrides=_options(extra))
    return None


def entrypoint_launch(entrypoint: str) -> Launch | None:
    """A RayJob's `spec.entrypoint` (a shell command line)."""
    return recognise({"command": ["bash", "-c", entrypoint]})
