"""The emulated world InstantStart runs against: AWS (moto + extensions) and Kubernetes API emulators.

Imports nothing from Django. `from sandbox.server import Sandbox` (imported lazily here so that
`import sandbox` stays cheap). SageMaker MLflow is backed by real `mlflow server` processes
(mlflow_server.py); simulated trainers log to them through mlflow_runs.py.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Sandbox"]


def __getattr__(name: str) -> Any:
    if name == "Sandbox":
        from sandbox.server import Sandbox

        return Sandbox
    raise AttributeError(name)
