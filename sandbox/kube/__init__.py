"""The Kubernetes half of the sandbox: an API server emulator per EKS cluster plus simulated
controllers. Entry point: `KubeWorld` (see sandbox/CONTRACT.md)."""

from __future__ import annotations

from .world import KubeWorld

__all__ = ["KubeWorld"]
