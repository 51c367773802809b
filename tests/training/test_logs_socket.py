"""The live log socket against a running job: what it streams is what REST stores, line for line; a
reconnect with `after` (a frame's `next`) neither loses nor repeats a line; two viewers get the same
lines; a frame carries a batch of lines; `pod=` sends that pod's lines and still moves `next` over the
others; another team's job closes it with 4404. Served by the real ASGI application under uvicorn.
How frames are cut (caps, the pod filter, `next`) is tested on `frames` itself at the end."""

from __future__ import annotations

import json
import threading

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.support import wait_until
from training import consumers

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
    # A third viewer leaves after the frame that brings its 20th line and comes back with its `next`.
    first, cut = read_socket(url + "?after=0", auth, stop_after=20)
    assert cut["next"] == first[-1]["seq"]
    rest_of, end = read_socket(f"{url}?after={cut['next']}", auth)
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
    # ... in frames of many lines (full ones up to the frame cap), each `next` its last line, then the end.
    with connect(f"{url}?after=0", additional_headers=auth, open_timeout=10) as socket:
        replayed = []
        while "lines" in (message := json.loads(socket.recv(timeout=30))):
            replayed.append(message)
        assert message == end
    assert [line for frame in replayed for line in frame["lines"]] == stored
    assert [frame["next"] for frame in replayed] == [frame["lines"][-1]["seq"] for frame in replayed]
    assert [len(frame["lines"]) for frame in replayed[:-1]] == [consumers.FRAME_LINES] * (len(replayed) - 1)
    assert len(replayed) == -(-len(stored) // consumers.FRAME_LINES)
    # One pod's lines, and the end's `next` is past the other pod's too; a reconnect with a frame's
    # `next` misses none of that pod's lines and repeats none.
    pod = stored[0]["pod"]
    mine = [line for line in stored if line["pod"] == pod]
    assert 0 < len(mine) < len(stored)
    assert read_socket(f"{url}?after=0&pod={pod}", auth) == (mine, end)
    half = mine[len(mine) // 2]["seq"]
    assert read_socket(f"{url}?after={half}&pod={pod}", auth)[0] == [line for line in mine if line["seq"] > half]


def test_socket_of_another_teams_job_closes_with_4404_and_without_credentials_4401(asgi, team, other_team, admin_token):
    job = _job(other_team, "theirs")
    for headers, code in (({"Authorization": f"Bearer {admin_token}"}, 4404), ({}, 4401)):
        with connect(f"{asgi.ws}/ws/jobs/{job.pk}/logs/", additional_headers=headers) as socket:
            with pytest.raises(ConnectionClosed) as closed:
                socket.recv(timeout=10)
        assert closed.value.rcvd.code == code


def _job(team, name: str, **fields):
    """A job row of a cluster of ``team`` (both named ``name``), without running anything."""
    from tests.factories import ClusterFactory
    from training.models import Job

    cluster = ClusterFactory(team=team, name=name)
    return Job.objects.create(
        cluster=cluster, name=name, recipe="pytorch", kind="HyperPodPyTorchJob", namespace="ns", k8s_name=name, **fields
    )


def _lines(*pods: str, text: str = "x") -> list[tuple[int, str, str]]:
    return [
        (seq, pod, json.dumps({"seq": seq, "pod": pod, "ts": None, "text": text}))
        for seq, pod in enumerate(pods, start=1)
    ]


def test_frames_batch_lines_and_next_is_the_last_seq_passed(monkeypatch):
    lines = _lines("a", "b", "a", "a", "b")
    texts, cursor = consumers.frames(lines, 0)
    assert cursor == 5 and [json.loads(t) for t in texts] == [
        {"lines": [json.loads(m) for _, _, m in lines], "next": 5}
    ]
    # Only what is past the cursor; nothing past it: no frame at all.
    assert [json.loads(t)["next"] for t in consumers.frames(lines, 3)[0]] == [5]
    assert consumers.frames(lines, 5) == ([], 5)
    # A pod filter sends that pod's lines; `next` covers the lines it skipped, and a batch with none of
    # the pod still moves it on (an empty frame).
    texts, cursor = consumers.frames(lines, 0, "b")
    assert cursor == 5 and [[x["seq"] for x in json.loads(t)["lines"]] for t in texts] == [[2, 5]]
    assert consumers.frames(lines, 2, "b") == ([consumers.frame([lines[4][2]], 5)], 5)
    assert consumers.frames(lines[:4], 2, "b") == (['{"lines":[],"next":4}'], 4)
    # Capped by lines and by characters (a line longer than the cap still goes, alone).
    monkeypatch.setattr(consumers, "FRAME_LINES", 2)
    texts, cursor = consumers.frames(lines, 0)
    assert cursor == 5
    assert [([x["seq"] for x in json.loads(t)["lines"]], json.loads(t)["next"]) for t in texts] == [
        ([1, 2], 2),
        ([3, 4], 4),
        ([5], 5),
    ]
    monkeypatch.setattr(consumers, "FRAME_LINES", 100)
    monkeypatch.setattr(consumers, "FRAME_CHARS", 100)
    big = _lines("a", "a", "a", text="y" * 60)
    assert [[x["seq"] for x in json.loads(t)["lines"]] for t in consumers.frames(big, 0)[0]] == [[1], [2], [3]]


def test_a_tail_batch_is_framed_once_for_every_socket_that_takes_all_of_it():
    batch = consumers.Batch(_lines("a", "b", "a"))
    whole = batch.frames_after(0, "")
    assert batch.frames_after(0, "") is whole
    assert batch.frames_after(1, "") == consumers.frames(batch, 1)
    assert batch.frames_after(0, "a") == consumers.frames(batch, 0, "a")


@pytest.mark.django_db
def test_lines_encoded_by_postgresql_are_the_messages_python_and_rest_give(team):
    from datetime import UTC, datetime

    from training.api.jobs import line_data
    from training.models import LogLine

    job = _job(team, "enc")
    texts = ['say "hi" \\ back', "tab\there\r", "\x01\x1f\x7f", "snow ☃ and \u2028 and 𝄞", "", "x" * 70000]
    stamps = [
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),  # no microseconds: isoformat() writes none
        datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 4, 5, 7, tzinfo=UTC),
        None,
    ]
    LogLine.objects.bulk_create(
        LogLine(job=job, seq=i + 1, pod=f"pod-{i % 2}", ts=stamps[i % len(stamps)], text=text)
        for i, text in enumerate(texts)
    )
    rest = [line_data(line) for line in LogLine.objects.filter(job=job).order_by("seq")]
    in_db = consumers.lines_after(job.pk, 0, in_database=True)
    in_python = consumers.lines_after(job.pk, 0, in_database=False)
    assert [(seq, pod) for seq, pod, _ in in_db] == [(line["seq"], line["pod"]) for line in rest]
    assert [json.loads(message) for _, _, message in in_db] == rest
    assert [json.loads(message) for _, _, message in in_python] == rest
    assert [seq for seq, _, _ in consumers.lines_after(job.pk, 4, limit=1)] == [5]


@pytest.fixture
def row_reads(monkeypatch):
    """Each read of a job's stored lines the sockets and tails make: (after, limit)."""
    reads: list[tuple[int, int]] = []
    read = consumers._lines_after

    async def counted(job_id, after, limit=consumers.BATCH):
        reads.append((after, limit))
        return await read(job_id, after, limit)

    monkeypatch.setattr(consumers, "_lines_after", counted)
    monkeypatch.setattr(consumers.JobTail, "kept", consumers.OrderedDict())
    return reads


def _finished_job(team, lines: int):
    from training.models import JobStatus, LogLine

    job = _job(team, "done", status=JobStatus.SUCCEEDED, last_seq=lines)
    LogLine.objects.bulk_create(
        LogLine(job=job, seq=seq, pod=f"done-pod-{seq % 2}", ts=None, text=f"line {seq}") for seq in range(1, lines + 1)
    )
    return job


def _viewers(url: str, auth: dict, afters: list[int]) -> list[list[int]]:
    seen: list[list[int]] = [[] for _ in afters]

    def view(i: int) -> None:
        seen[i] = [line["seq"] for line in read_socket(f"{url}?after={afters[i]}", auth, timeout=30)[0]]

    threads = [threading.Thread(target=view, args=(i,)) for i in range(len(afters))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return seen


def test_viewers_joining_at_once_read_the_rows_once_and_a_replay_reads_none(
    asgi, team, admin_token, row_reads, monkeypatch
):
    """Twelve viewers of one job opening at once (as a team opens a job everyone watches) each get every
    line after their `after`, once and in order, while its rows are read once for all of them and their
    shared credential is checked once; once they have left, replaying the ended job's log reads no rows."""
    checks = []
    check = consumers._check_job_access

    async def counted(scope, job_id):
        checks.append(job_id)
        return await check(scope, job_id)

    monkeypatch.setattr(consumers, "_check_job_access", counted)
    job = _finished_job(team, 300)
    url, auth = f"{asgi.ws}/ws/jobs/{job.pk}/logs/", {"Authorization": f"Bearer {admin_token}"}
    afters = [0] * 10 + [150, 299]
    seen = _viewers(url, auth, afters)
    assert seen == [list(range(after + 1, 301)) for after in afters]
    read = [seq for after, limit in row_reads if after < 300 for seq in range(after + 1, min(after + limit, 300) + 1)]
    assert sorted(read) == list(range(1, 301))  # each stored line read once, for all twelve
    assert checks == [str(job.pk)]
    row_reads.clear()
    assert _viewers(url, auth, [0, 42]) == [list(range(1, 301)), list(range(43, 301))]
    assert [after for after, _ in row_reads if after < 300] == []


def test_viewers_further_back_than_the_history_read_the_rows_themselves(
    asgi, team, admin_token, row_reads, monkeypatch
):
    monkeypatch.setattr(consumers, "HISTORY_LINES", 50)
    job = _finished_job(team, 300)
    url, auth = f"{asgi.ws}/ws/jobs/{job.pk}/logs/", {"Authorization": f"Bearer {admin_token}"}
    assert _viewers(url, auth, [0, 0, 280]) == [list(range(1, 301)), list(range(1, 301)), list(range(281, 301))]
    assert sorted(after for after, _ in row_reads if after < 300).count(0) == 2  # too far back: each reads


def test_a_replay_of_a_kept_tail_reads_the_lines_stored_since_it_ended_and_only_those(
    asgi, team, admin_token, row_reads
):
    """An ended job whose tail was kept, and rows stored after that (a cancelled job's streams can store
    the last lines its pods printed after it showed its end): a replay gets every line and then the end,
    and reads only the new rows."""
    from training.models import Job, LogLine

    job = _finished_job(team, 300)
    url, auth = f"{asgi.ws}/ws/jobs/{job.pk}/logs/", {"Authorization": f"Bearer {admin_token}"}
    assert _viewers(url, auth, [0]) == [list(range(1, 301))]
    wait_until(lambda: str(job.pk) in consumers.JobTail.kept, timeout=10, message="the ended job's tail kept")
    LogLine.objects.bulk_create(LogLine(job=job, seq=seq, pod="done-pod-0", text=f"late {seq}") for seq in (301, 302))
    Job.objects.filter(pk=job.pk).update(last_seq=302)
    row_reads.clear()
    lines, end = read_socket(f"{url}?after=0", auth, timeout=30)
    assert [line["seq"] for line in lines] == list(range(1, 303)) and lines[-1]["text"] == "late 302"
    assert end == {"status": "succeeded", "next": 302}
    assert [after for after, _ in row_reads if after < 300] == []
