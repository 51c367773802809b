"""The live log socket against a running job: what it streams is what REST stores, line for line; a
reconnect with `after` neither loses nor repeats a line; two viewers get the same lines; another team's
job closes it with 4404. Served by the real ASGI application under uvicorn."""

from __future__ import annotations

import threading

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from .helpers import read_socket, rest_lines, upload, wait_for_job

pytestmark = [pytest.mark.worker]


@pytest.fixture
def long_runs(settings):
    # The sandbox's run steering: the program stretches its steps over this many simulated seconds.
    settings.TRAINING_POD_ANNOTATIONS = {"sandbox.instantstart.io/run-seconds": "4000"}


def test_socket_lines_match_rest_and_survive_reconnects_for_two_viewers(
    cluster, admin_api, admin_token, asgi, long_runs, outsider_api, other_team
):
    upload(admin_api, cluster, "scripts/train.py", b"print('train')\n")
    body = {
        "name": "live",
        "recipe": "pytorch",
        "instance_group": "gpu",
        "nodes": 2,
        "script": "/s3/scripts/train.py",
        "args": ["--max_steps", "200"],
        # At the sandbox's speed a stretched step takes under a real second: no hang rule here.
        "hang_detection": [],
    }
    job = admin_api.post(f"/api/v1/clusters/{cluster.pk}/jobs/", body, format="json").json()["job"]
    url = f"{asgi.ws}/ws/jobs/{job['id']}/logs/"
    auth = {"Authorization": f"Bearer {admin_token}"}
    seen: dict[str, list] = {}

    def view(name: str) -> None:
        seen[name] = read_socket(url + "?after=0", auth)[0]

    viewers = [threading.Thread(target=view, args=(name,)) for name in ("a", "b")]
    for viewer in viewers:
        viewer.start()
    # A third viewer leaves after 20 lines and comes back with the last seq it saw.
    first, _ = read_socket(url + "?after=0", auth, stop_after=20)
    rest_of, end = read_socket(f"{url}?after={first[-1]['seq']}", auth)
    for viewer in viewers:
        viewer.join(120)
    done = wait_for_job(admin_api, cluster, job["id"])
    assert done["status"] == "succeeded", (done["status_message"], [e["message"] for e in done["events"]])
    stored = rest_lines(admin_api, cluster, job["id"])
    assert len(stored) > 40
    assert seen["a"] == stored
    assert seen["b"] == stored
    assert first + rest_of == stored
    assert end == {"status": "succeeded", "next": stored[-1]["seq"]}
    # A reload after the end replays from any point and ends at once.
    assert read_socket(f"{url}?after={stored[-5]['seq']}", auth)[0] == stored[-4:]


def test_socket_of_another_teams_job_closes_with_4404_and_without_credentials_4401(asgi, team, other_team, admin_token):
    from tests.factories import ClusterFactory
    from training.models import Job

    theirs = ClusterFactory(team=other_team, name="theirs")
    job = Job.objects.create(
        cluster=theirs, name="x", recipe="pytorch", kind="HyperPodPyTorchJob", namespace="globex", k8s_name="x-1"
    )
    for headers, code in (({"Authorization": f"Bearer {admin_token}"}, 4404), ({}, 4401)):
        with connect(f"{asgi.ws}/ws/jobs/{job.pk}/logs/", additional_headers=headers) as socket:
            with pytest.raises(ConnectionClosed) as closed:
                socket.recv(timeout=10)
        assert closed.value.rcvd.code == code
