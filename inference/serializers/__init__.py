"""All input validation of the inference app, and the representations every face answers with.

endpoints.py  deploy, scale, invoke, assign a pool worker; the endpoint itself
models.py     model downloads
"""

from .endpoints import (
    AssignWorkerSerializer,
    EndpointDeploySerializer,
    EndpointScaleSerializer,
    EndpointSerializer,
    InvokeSerializer,
)
from .models import ModelDownloadSerializer, ModelSerializer

__all__ = [
    "AssignWorkerSerializer",
    "EndpointDeploySerializer",
    "EndpointScaleSerializer",
    "EndpointSerializer",
    "InvokeSerializer",
    "ModelDownloadSerializer",
    "ModelSerializer",
]
