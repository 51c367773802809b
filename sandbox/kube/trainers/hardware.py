"""Accelerators of the instance types training runs on, for plausible throughput.

Throughput is estimated the way practitioners do: tokens/s per device = peak bf16 FLOP/s x MFU /
(6 x parameters) for full training (4 x for LoRA, whose backward skips the frozen weights), and
multi-node efficiency that falls per doubling of nodes (gently with EFA, steeply over TCP).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Accelerator:
    name: str  # as `nvidia-smi` / torch.cuda.get_device_name() names it
    tflops_bf16: float  # dense peak
    memory_gib: int


# instance family prefix (without "ml.") -> accelerator; longest prefix wins
_FAMILIES = {
    "p6-b300": Accelerator("NVIDIA B300", 2500.0, 288),
    "p6-b200": Accelerator("NVIDIA B200", 2250.0, 180),
    "p5en": Accelerator("NVIDIA H200", 989.0, 141),
    "p5e": Accelerator("NVIDIA H200", 989.0, 141),
    "p5": Accelerator("NVIDIA H100 80GB HBM3", 989.0, 80),
    "p4de": Accelerator("NVIDIA A100-SXM4-80GB", 312.0, 80),
    "p4d": Accelerator("NVIDIA A100-SXM4-40GB", 312.0, 40),
    "g6e": Accelerator("NVIDIA L40S", 362.0, 45),
    "g6": Accelerator("NVIDIA L4", 121.0, 22),
    "g5": Accelerator("NVIDIA A10G", 125.0, 22),
    "g4dn": Accelerator("Tesla T4", 65.0, 15),
    "trn2": Accelerator("Trainium2", 667.0, 96),
    "trn1": Accelerator("Trainium", 190.0, 32),
}
DEFAULT = _FAMILIES["p5"]
MFU = 0.38


def accelerator(instance_type: str) -> Accelerator:
    family = (instance_type or "")[3:] if (instance_type or "").startswith("ml.") else (instance_type or "")
    family = family.split(".")[0]
    for prefix in sorted(_FAMILIES, key=len, reverse=True):
        if family.startswith(prefix):
            return _FAMILIES[prefix]
    return DEFAULT


def tokens_per_second(instance_type: str, params_b: float, devices: int, nodes: int, efa: bool, lora: bool) -> float:
    """Cluster-wide training tokens/s for a model of `params_b` billion parameters."""
    acc = accelerator(instance_type)
    flops_per_token = (4.0 if lora else 6.0) * params_b * 1e9
    per_device = acc.tflops_bf16 * 1e12 * MFU / flops_per_token
    doublings = max(nodes, 1).bit_length() - 1
    efficiency = (0.95 if efa else 0.7) ** doublings
    return per_device * max(devices, 1) * efficiency
