"""The emulated accounts' S3 buckets as an ObjectStore for the Kubernetes half (S3 CSI mounts
read models from them, download Jobs write them): moto's S3 backend, used under World.lock."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.serving.objects import SIZE_META

if TYPE_CHECKING:
    from sandbox.aws.world import World


class MotoObjects:
    """ObjectStore over moto's in-process S3 (what `aws s3 ls` against the sandbox shows)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def _backend(self, account: str):  # noqa: ANN202 - moto's S3Backend
        from moto.s3.models import s3_backends

        return s3_backends[account]["aws"]

    def _bucket(self, account: str, bucket: str):  # noqa: ANN202
        from moto.s3.exceptions import MissingBucket

        try:
            return self._backend(account).get_bucket(bucket)
        except MissingBucket:
            return None

    def list(self, account: str, bucket: str, prefix: str) -> list[tuple[str, int]] | None:
        with self.world.lock:
            b = self._bucket(account, bucket)
            if b is None:
                return None
            keys, _prefixes, _truncated, _next = self._backend(account).list_objects(b, prefix, None, None, None)
            out = []
            for k in keys:
                nominal = (k.metadata or {}).get(f"x-amz-meta-{SIZE_META}")
                out.append((k.name, int(nominal) if nominal else int(k.size)))
            return sorted(out)

    def put(self, account: str, bucket: str, key: str, body: bytes, size: int | None = None) -> bool:
        with self.world.lock:
            if self._bucket(account, bucket) is None:
                return False
            obj = self._backend(account).put_object(bucket, key, body)
            if size is not None:
                obj.set_metadata({f"x-amz-meta-{SIZE_META}": str(size)})
            return True

    def get(self, account: str, bucket: str, key: str) -> bytes | None:
        with self.world.lock:
            if self._bucket(account, bucket) is None:
                return None
            obj = self._backend(account).get_object(bucket, key)
            return bytes(obj.value) if obj is not None else None
