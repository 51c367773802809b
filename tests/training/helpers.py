"""Helpers of the training tests: the cluster they run on, turning its training features on, waiting."""

from __future__ import annotations

from kubernetes.dynamic import DynamicClient

from instantstart.cloud.aws import team_cloud
from instantstart.cloud.kube import api_client
from tests.clusters.helpers import wait_for_operation  # noqa: F401 - the training tests wait with it too
from tests.support import wait_until

GROUP = {"name": "gpu", "instance_type": "ml.g5.12xlarge", "count": 2}
CLUSTER_BODY = {"name": "train", "region": "us-west-2", "availability_zone": "us-west-2a", "instance_groups": [GROUP]}


def kube(cluster):
    return api_client(team_cloud(cluster.team, cluster.region), cluster.eks_cluster_name, cluster.region)


def enable_training_features(cluster) -> None:
    """What the features app will do: the training operator add-on (after cert-manager and the pod
    identity agent) and KubeRay's Helm-equivalent objects by server-side apply."""
    from sandbox.kube.operators.crds import load_crd
    from sandbox.kube.operators.helm import release_objects

    eks = team_cloud(cluster.team, cluster.region).client("eks", cluster.region)
    present = set(eks.list_addons(clusterName=cluster.eks_cluster_name)["addons"])
    for addon in ("cert-manager", "eks-pod-identity-agent", "amazon-sagemaker-hyperpod-training-operator"):
        if addon not in present:
            eks.create_addon(clusterName=cluster.eks_cluster_name, addonName=addon)
        wait_until(
            lambda a=addon: (
                eks.describe_addon(clusterName=cluster.eks_cluster_name, addonName=a)["addon"]["status"] == "ACTIVE"
            ),
            timeout=60,
            message=f"{addon} ACTIVE",
        )
    dyn = DynamicClient(kube(cluster))
    objects = []
    for obj in release_objects("kuberay-operator"):
        if isinstance(obj, str):  # a CRD file, applied verbatim minus its status
            crd = load_crd(obj)
            obj = {k: crd[k] for k in ("apiVersion", "kind", "spec")} | {"metadata": {"name": crd["metadata"]["name"]}}
        objects.append(obj)
    for obj in sorted(objects, key=lambda o: o["kind"] != "CustomResourceDefinition"):
        resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        namespace = obj["metadata"].get("namespace") if resource.namespaced else None
        dyn.server_side_apply(
            resource, body=obj, namespace=namespace, field_manager="instantstart", force_conflicts=True
        )
        if obj["kind"] == "CustomResourceDefinition":
            dyn.resources.invalidate_cache()


def upload(api, cluster, path: str, content: bytes) -> dict:
    from django.core.files.uploadedfile import SimpleUploadedFile

    answer = api.post(
        f"/api/v1/clusters/{cluster.pk}/files/",
        {"file": SimpleUploadedFile(path.rsplit("/", 1)[-1], content), "path": path},
        format="multipart",
    )
    assert answer.status_code == 201, answer.json()
    assert answer.json()["size"] == len(content), answer.json()  # what S3 holds now
    return answer.json()


def wait_for_job(api, cluster, job_id: str, statuses=("succeeded", "failed", "cancelled"), timeout: float = 90) -> dict:
    def ended():
        job = api.get(f"/api/v1/clusters/{cluster.pk}/jobs/{job_id}/").json()
        return job if job["status"] in statuses else None

    return wait_until(ended, timeout=timeout, interval=0.3, message=f"job {job_id} in {statuses}")


def rest_lines(api, cluster, job_id: str) -> list[dict]:
    """Every stored line of the job through REST, page by page with `next`."""
    lines, after = [], 0
    while True:
        page = api.get(f"/api/v1/clusters/{cluster.pk}/jobs/{job_id}/logs/?after={after}&limit=1000").json()
        lines.extend(page["lines"])
        if not page["lines"]:
            return lines
        after = page["next"]


class AsgiServer:
    """The real ASGI application under uvicorn in a thread (HTTP and websockets), on a free port."""

    def __init__(self) -> None:
        import socket
        import threading

        import uvicorn

        from instantstart.asgi import application

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.server = uvicorn.Server(
            uvicorn.Config(application, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.server.started, timeout=20, message="uvicorn started")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def stop(self) -> None:
        from asgiref.sync import SyncToAsync
        from django.db import connections

        self.server.should_exit = True
        self.thread.join(10)
        # The ORM work of the server ran on asgiref's one sync thread: close its connections there, so
        # the test database can be dropped at the end of the run.
        SyncToAsync.single_thread_executor.submit(connections.close_all).result(10)


def read_socket(url: str, headers: dict, *, stop_after: int | None = None, timeout: float = 90) -> tuple[list, dict]:
    """Lines of a log socket until its end-of-job status (or the frame that reaches ``stop_after`` lines):
    (the lines of every frame, flat; the end message, or {"next"} of the last frame read). Each frame is
    checked on the way: `next` is its last line's seq or later."""
    import json

    from websockets.sync.client import connect

    lines: list[dict] = []
    with connect(url, additional_headers=headers, open_timeout=10, close_timeout=2) as socket:
        while True:
            message = json.loads(socket.recv(timeout=timeout))
            if "status" in message:
                return lines, message
            assert set(message) == {"lines", "next"}, message
            assert not message["lines"] or message["next"] >= message["lines"][-1]["seq"], message
            lines.extend(message["lines"])
            if stop_after is not None and len(lines) >= stop_after:
                return lines, {"next": message["next"]}
