"""Pod logs, read a piece at a time from where the collector stopped (kubelet timestamps, sinceTime)."""

from __future__ import annotations

from urllib.parse import quote, urlencode

from instantstart.errors import cloud_read

from .cluster import kube


def _split(line: str) -> tuple[str, str]:
    stamp, _, text = line.partition(" ")
    return stamp, text


@cloud_read()
def read_pod_log(cluster, namespace: str, pod: str, since: str | None) -> list[tuple[str, str]]:
    """(RFC 3339 timestamp, text) of each line the pod printed at or after ``since`` (all when None).

    The official client has no sinceTime argument, so the request is made on its connection pool with
    its credentials. A pod that is gone or has not started has no log yet: [].
    """
    api = kube(cluster)
    query = {"timestamps": "true"}
    if since:
        query["sinceTime"] = since
    url = f"{api.configuration.host}/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/log?{urlencode(query)}"
    headers = {"Authorization": api.configuration.api_key["authorization"], "Accept": "text/plain"}
    answer = api.rest_client.pool_manager.request("GET", url, headers=headers, timeout=30, preload_content=True)
    if answer.status in (400, 404):  # waiting for its container, or gone
        return []
    if answer.status >= 300:
        from kubernetes.client.exceptions import ApiException

        raise ApiException(status=answer.status, reason=answer.reason, body=answer.data)
    return [_split(line) for line in answer.data.decode("utf-8", "replace").splitlines() if line]
