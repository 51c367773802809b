"""Where serving pods read models from and download Jobs write them: the emulated S3 buckets
(through an `ObjectStore`) and FSx for Lustre file systems (recorded per cluster).

The Kubernetes half knows nothing of moto: the sandbox server hands `KubeWorld` an ObjectStore
backed by moto's S3 (sandbox/aws/s3_objects.py); a bare KubeWorld uses `MemoryObjects`.
ObjectStore calls are made from the serving I/O thread, never with a cluster lock held (the
AWS half takes its own lock).
"""

from __future__ import annotations

import threading
from typing import Protocol

# user metadata on placeholder objects: the size the real file has on the Hub
SIZE_META = "sandbox-original-size"


class ObjectStore(Protocol):
    def list(self, account: str, bucket: str, prefix: str) -> list[tuple[str, int]] | None:
        """(key, size) under prefix; None when the bucket does not exist."""

    def put(self, account: str, bucket: str, key: str, body: bytes, size: int | None = None) -> bool:
        """Store an object; False when the bucket does not exist. `size` is the nominal size."""

    def get(self, account: str, bucket: str, key: str) -> bytes | None:
        """An object's body; None when the bucket or the key does not exist."""


class MemoryObjects:
    """An ObjectStore in memory (a KubeWorld served without the AWS half). Buckets exist once
    `create_bucket` was called."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], dict[str, tuple[bytes, int]]] = {}

    def create_bucket(self, account: str, bucket: str) -> None:
        with self._lock:
            self._buckets.setdefault((account, bucket), {})

    def list(self, account: str, bucket: str, prefix: str) -> list[tuple[str, int]] | None:
        with self._lock:
            b = self._buckets.get((account, bucket))
            if b is None:
                return None
            return sorted((k, size) for k, (_body, size) in b.items() if k.startswith(prefix))

    def put(self, account: str, bucket: str, key: str, body: bytes, size: int | None = None) -> bool:
        with self._lock:
            b = self._buckets.get((account, bucket))
            if b is None:
                return False
            b[key] = (body, size if size is not None else len(body))
            return True

    def get(self, account: str, bucket: str, key: str) -> bytes | None:
        with self._lock:
            hit = (self._buckets.get((account, bucket)) or {}).get(key)
            return hit[0] if hit else None
