"""What the emulated Hugging Face Hub holds: repos, their files and sizes, which are gated.

The sandbox reaches no hub. A few well-known repos are described as they are on the Hub (file
names, shard counts, sizes, gating); any other well-formed id is treated as a public repo whose
file set is derived from its name (a "7B" model gets ~15 GB of safetensors shards). Bodies written
to the emulated bucket are small placeholders (config.json is real JSON), sizes are recorded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

GiB = 1024**3
MiB = 1024**2


@dataclass(frozen=True)
class Repo:
    """One Hub repo as the sandbox knows it."""

    id: str
    kind: str  # model | dataset
    files: tuple[tuple[str, int], ...]
    gated: bool = False
    architecture: str = "LlamaForCausalLM"
    heads: int = 32
    max_len: int = 32768

    @property
    def size_bytes(self) -> int:
        return sum(s for _, s in self.files)


def _model_files(total: int, shards: int, tokenizer: tuple[str, ...] = ("tokenizer.json", "tokenizer_config.json")):
    files: list[tuple[str, int]] = [("config.json", 726), ("generation_config.json", 239)]
    files += [(t, 11_422_654 if t == "tokenizer.json" else 9_706) for t in tokenizer]
    if shards == 1:
        files.append(("model.safetensors", total))
    else:
        per = total // shards
        files += [(f"model-{i:05d}-of-{shards:05d}.safetensors", per) for i in range(1, shards + 1)]
        files.append(("model.safetensors.index.json", 23_950))
    files += [("README.md", 4_215), (".gitattributes", 1_570)]
    return tuple(files)


KNOWN: dict[str, Repo] = {
    r.id: r
    for r in (
        Repo(
            "Qwen/Qwen3-0.6B",
            "model",
            _model_files(1_503_300_328, 1, ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt")),
            architecture="Qwen3ForCausalLM",
            heads=16,
            max_len=40960,
        ),
        Repo("Qwen/Qwen3-8B", "model", _model_files(16_381_470_720, 5), architecture="Qwen3ForCausalLM", max_len=40960),
        Repo(
            "Qwen/Qwen2.5-7B-Instruct",
            "model",
            _model_files(15_231_233_024, 4),
            architecture="Qwen2ForCausalLM",
            heads=28,
        ),
        Repo("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "model", _model_files(2_200_119_864, 1), heads=32, max_len=2048),
        Repo(
            "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
            "model",
            _model_files(3_554_214_752, 1),
            architecture="Qwen2ForCausalLM",
            heads=12,
            max_len=131072,
        ),
        Repo("meta-llama/Llama-3.1-8B-Instruct", "model", _model_files(16_060_522_496, 4), gated=True, max_len=131072),
        Repo(
            "meta-llama/Llama-3.3-70B-Instruct",
            "model",
            _model_files(141_107_412_992, 30),
            gated=True,
            heads=64,
            max_len=131072,
        ),
        Repo(
            "mistralai/Mistral-7B-Instruct-v0.3",
            "model",
            _model_files(14_496_078_848, 3),
            gated=True,
            architecture="MistralForCausalLM",
        ),
        Repo(
            "tatsu-lab/alpaca",
            "dataset",
            (
                ("data/train-00000-of-00001-a09b74b3ef9c3b56.parquet", 24_246_638),
                ("README.md", 7_470),
                (".gitattributes", 2_308),
            ),
        ),
        Repo(
            "HuggingFaceH4/ultrachat_200k",
            "dataset",
            tuple(
                [(f"data/train_sft-0000{i}-of-00003.parquet", 244_000_000) for i in range(3)]
                + [("data/test_sft-00000-of-00001.parquet", 81_200_000), ("README.md", 4_490)]
            ),
        ),
    )
}

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
_PARAMS = re.compile(r"(\d+(?:\.\d+)?)\s*[bB]\b|(\d+(?:\.\d+)?)[bB](?=[-_.]|$)")


def valid_id(repo_id: str) -> bool:
    return bool(_ID.match(repo_id)) and "--" not in repo_id and ".." not in repo_id


def lookup(repo_id: str, kind: str = "model") -> Repo:
    """The repo of that id; unknown ids are public repos sized from their name."""
    known = KNOWN.get(repo_id)
    if known is not None and known.kind == kind:
        return known
    if kind == "dataset":
        return Repo(repo_id, "dataset", (("data/train-00000-of-00001.parquet", 52_428_800), ("README.md", 3_100)))
    m = _PARAMS.search(repo_id.split("/")[-1])
    billions = float(m.group(1) or m.group(2)) if m else 1.0
    total = int(billions * 2 * 1_000_000_000)  # bf16: two bytes per parameter
    shards = max(1, round(total / (4 * GiB)))
    return Repo(repo_id, "model", _model_files(total, shards))


def config_json(repo: Repo) -> bytes:
    """A real-looking config.json: what vLLM/SGLang read first."""
    return json.dumps(
        {
            "architectures": [repo.architecture],
            "model_type": repo.architecture.replace("ForCausalLM", "").lower(),
            "num_attention_heads": repo.heads,
            "num_key_value_heads": max(1, repo.heads // 4),
            "max_position_embeddings": repo.max_len,
            "torch_dtype": "bfloat16",
            "_name_or_path": repo.id,
        },
        indent=2,
    ).encode()


def body_of(repo: Repo, name: str) -> bytes:
    """Stored bodies are small: real JSON for config.json, a marker for the rest."""
    if name == "config.json":
        return config_json(repo)
    return f"sandbox placeholder for {repo.id}/{name}\n".encode()
