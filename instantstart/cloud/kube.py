"""Kubernetes API clients per EKS cluster: the only door to Kubernetes.

Connects exactly as to EKS: the endpoint and CA from DescribeCluster, and a bearer token in the
EKS format (a presigned STS GetCallerIdentity URL naming the cluster). Tokens live 15 minutes;
clients are rebuilt well before that.
"""

from __future__ import annotations

import base64
import functools
import tempfile
import threading
import time

import urllib3
from botocore.signers import RequestSigner
from kubernetes import client as k8s

from .aws import TeamCloud

TOKEN_PREFIX = "k8s-aws-v1."
_CLIENT_TTL_SECONDS = 600
# Every call without its own ``_request_timeout`` gets this one (connect, read seconds): the official
# client otherwise waits forever on an API server that stops answering, holding a worker thread.
# Long reads (log follow, watch) pass their own.
DEFAULT_TIMEOUT = urllib3.Timeout(connect=10, read=120)

_lock = threading.Lock()
_clients: dict[tuple, tuple[float, k8s.ApiClient]] = {}


def eks_token(cloud: TeamCloud, cluster_name: str, region: str | None = None) -> str:
    """A bearer token for an EKS cluster, as `aws eks get-token` makes it."""
    region = region or cloud.region
    session = cloud.session(region)
    sts = session.client("sts", endpoint_url=cloud.endpoint_url)
    signer = RequestSigner(
        sts.meta.service_model.service_id, region, "sts", "v4", session.get_credentials(), session.events
    )
    url = (cloud.endpoint_url or f"https://sts.{region}.amazonaws.com").rstrip("/")
    presigned = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"{url}/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {"x-k8s-aws-id": cluster_name},
            "context": {},
        },
        region_name=region,
        expires_in=60,
        operation_name="",
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(presigned.encode()).decode().rstrip("=")


def api_client(cloud: TeamCloud, cluster_name: str, region: str | None = None) -> k8s.ApiClient:
    """An ApiClient for the cluster's API server (endpoint and CA read from EKS)."""
    region = region or cloud.region
    key = (cloud.team_id, region, cluster_name, cloud.endpoint_url)
    with _lock:
        cached = _clients.get(key)
    if cached and cached[0] > time.time():
        return cached[1]
    described = cloud.client("eks", region).describe_cluster(name=cluster_name)["cluster"]
    configuration = k8s.Configuration(host=described["endpoint"])
    configuration.api_key = {"authorization": f"Bearer {eks_token(cloud, cluster_name, region)}"}
    ca = (described.get("certificateAuthority") or {}).get("data")
    if described["endpoint"].startswith("https://") and ca:
        ca_file = tempfile.NamedTemporaryFile(prefix="eks-ca-", suffix=".pem", delete=False)  # noqa: SIM115
        ca_file.write(base64.b64decode(ca))
        ca_file.close()
        configuration.ssl_ca_cert = ca_file.name
    api = k8s.ApiClient(configuration)
    _default_timeout(api)
    with _lock:
        _clients[key] = (time.time() + _CLIENT_TTL_SECONDS, api)
    return api


def _default_timeout(api: k8s.ApiClient) -> None:
    """Give the client's requests DEFAULT_TIMEOUT when the caller set none (the client sends None)."""
    pool = api.rest_client.pool_manager
    request = pool.request

    @functools.wraps(request)
    def with_timeout(method, url, *args, timeout=None, **kwargs):
        return request(method, url, *args, timeout=DEFAULT_TIMEOUT if timeout is None else timeout, **kwargs)

    pool.request = with_timeout


FIELD_MANAGER = "instantstart"


def dynamic_client(api: k8s.ApiClient):
    from kubernetes.dynamic import DynamicClient

    return DynamicClient(api)


def apply(api: k8s.ApiClient, manifest: dict) -> dict:
    """Server-side apply one object (creates it when missing); returns the object as the server has it."""
    dyn = dynamic_client(api)
    resource = dyn.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    namespace = manifest.get("metadata", {}).get("namespace") if resource.namespaced else None
    result = dyn.server_side_apply(
        resource, body=manifest, namespace=namespace, field_manager=FIELD_MANAGER, force_conflicts=True
    )
    return result.to_dict()


def get(api: k8s.ApiClient, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
    """One object, or None when it does not exist."""
    from kubernetes.dynamic.exceptions import NotFoundError

    dyn = dynamic_client(api)
    resource = dyn.resources.get(api_version=api_version, kind=kind)
    try:
        return dyn.get(resource, name=name, namespace=namespace).to_dict()
    except NotFoundError:
        return None


def delete(api: k8s.ApiClient, api_version: str, kind: str, name: str, namespace: str | None = None) -> bool:
    """Delete an object; False when it was already gone."""
    from kubernetes.dynamic.exceptions import NotFoundError

    dyn = dynamic_client(api)
    resource = dyn.resources.get(api_version=api_version, kind=kind)
    try:
        dyn.delete(resource, name=name, namespace=namespace)
    except NotFoundError:
        return False
    return True
