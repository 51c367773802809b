"""All input validation of the training app and the representations every face answers with.

jobs.py      a submission (one serializer per recipe over the common fields) and the job
queries.py   query parameters (logs: after, pod, limit; files: prefix) and the upload form
"""

from .jobs import (
    RECIPE_SERIALIZERS,
    JobListSerializer,
    JobSerializer,
    JobSubmitRequestSerializer,
    JobSubmitSerializer,
    validated_submission,
)
from .queries import FilesQuerySerializer, FileUploadSerializer, LogsQuerySerializer

__all__ = [
    "RECIPE_SERIALIZERS",
    "FileUploadSerializer",
    "FilesQuerySerializer",
    "JobListSerializer",
    "JobSerializer",
    "JobSubmitRequestSerializer",
    "JobSubmitSerializer",
    "LogsQuerySerializer",
    "validated_submission",
]
