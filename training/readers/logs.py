"""Pod logs from where the collector stopped (kubelet timestamps, sinceTime): read once, or followed."""

from __future__ import annotations

from urllib.parse import quote, urlencode

from instantstart.errors import cloud_read

from .cluster import kube


def _split(line: str) -> tuple[str, str]:
    stamp, _, text = line.partition(" ")
    return stamp, text


def split_lines(data: bytes) -> list[tuple[str, str]]:
    """(timestamp, text) of each whole line of a `timestamps=true` log read."""
    return [_split(line) for line in data.decode("utf-8", "replace").splitlines() if line]


def _request(cluster, namespace: str, pod: str, since: str | None, *, follow: bool, timeout):
    """The official client has no sinceTime argument, so the request is made on its connection pool
    with its credentials. None for a pod that is gone or has not started (no log yet)."""
    api = kube(cluster)
    query = {"timestamps": "true"}
    if since:
        query["sinceTime"] = since
    if follow:
        query["follow"] = "true"
    url = f"{api.configuration.host}/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/log?{urlencode(query)}"
    headers = {"Authorization": api.configuration.api_key["authorization"], "Accept": "text/plain"}
    answer = api.rest_client.pool_manager.request(
        "GET", url, headers=headers, timeout=timeout, preload_content=not follow
    )
    if answer.status in (400, 404):  # waiting for its container, or gone
        answer.release_conn()
        return None
    if answer.status >= 300:
        from kubernetes.client.exceptions import ApiException

        body = answer.data if not follow else answer.read()
        raise ApiException(status=answer.status, reason=answer.reason, body=body)
    return answer


@cloud_read()
def read_pod_log(cluster, namespace: str, pod: str, since: str | None) -> list[tuple[str, str]]:
    """(RFC 3339 timestamp, text) of each line the pod printed at or after ``since`` (all when None);
    [] for a pod that is gone or has not started."""
    answer = _request(cluster, namespace, pod, since, follow=False, timeout=30)
    return [] if answer is None else split_lines(answer.data)


@cloud_read()
def open_pod_log(cluster, namespace: str, pod: str, since: str | None, idle_seconds: float):
    """The pod's log from ``since`` followed (`follow=true`): an unread urllib3 response whose chunks
    are the lines as the kubelet writes them, ended when the container stops; a read waits at most
    ``idle_seconds`` for the next chunk. None for a pod that is gone or has not started."""
    import urllib3

    return _request(cluster, namespace, pod, since, follow=True, timeout=urllib3.Timeout(connect=10, read=idle_seconds))
