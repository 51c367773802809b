"""InstantStart: a self-hosted control plane for ML on Amazon EKS + SageMaker HyperPod."""

from .celery import app as celery_app

__all__ = ["celery_app"]
