"""The live log socket: `/ws/jobs/{job}/logs/?after=SEQ[&pod=NAME]`.

On connect it sends every stored line after `after`, then each new one, in frames that carry batches
of lines in the REST logs answer's shape: `{"lines": [{seq, pod, ts, text}, ...], "next": SEQ}`, where
`next` is the last seq the socket has passed, lines that `pod=` filtered out included (a frame may then
carry no lines and only move `next` on). A frame holds what one read of the rows found, cut at
FRAME_LINES lines or about FRAME_CHARS characters. Once the job has ended and every line is sent, one
`{"status": ..., "next": SEQ}` message. A reconnect with the last `next` it saw therefore loses nothing
and repeats nothing.

Lines reach the socket from the database (the worker's collector writes them with their sequence
numbers), not through the channel layer: the web server and the worker are separate processes in
standalone mode, where the in-memory layer does not cross them, and this works the same under the
Redis layer in production. One tail per job per web process reads the new rows and hands them to
every socket watching that job, so a hundred viewers cost one query per poll, not a hundred; each
line's JSON is encoded once per read (by PostgreSQL, where it runs) and a frame is those strings
joined, built once for all the sockets that take the whole batch. The tail also keeps the job's
newest lines it has seen (up to HISTORY_LINES): a socket that joins behind the tail catches up from
them, and the first socket that needs older lines within that bound reads them once for all (a
hundred viewers opening a running job read its rows once, not a hundred times). Only a socket further
back reads the rows itself. The tails of a few ended jobs stay in memory after their last viewer
leaves (KEPT_TAILS), so replaying a finished job's log again reads no rows.

Auth: the portal's session cookie, or `Authorization: Bearer <token>`. Unauthenticated: closed 4401;
another team's job (or no such job): closed 4404.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import connection

from instantstart.errors import NotFound
from instantstart.tenancy.access import Access, Via
from instantstart.tenancy.models import hash_token

from .models import Job, JobStatus, LogLine

# Rows read per query: a catch-up after `after` reads this many at a time (and so may the tail, when
# the collector stored that many in one poll).
BATCH = 5000
# One frame carries at most this many lines and, past the first line, about this many characters:
# a replay of a long log is many frames, not one huge one, so the viewer decodes (and the browser shows)
# one frame while the next is built and compressed. A 2,141-line replay took 8 ms in 2,000-line frames
# and 5.5 ms in 250-line ones (bench/logs.py).
FRAME_LINES = 250
FRAME_CHARS = 1 << 20
# Lines a tail keeps for the sockets that join behind it (each line's encoded message, ~200 bytes),
# and how many ended jobs' tails stay in memory once nobody watches them.
HISTORY_LINES = 10000
KEPT_TAILS = 16
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


def _poll() -> float:
    return float(getattr(settings, "TRAINING_SOCKET_POLL_SECONDS", 0.05))


def _off_loop(func):
    """``func`` as a coroutine on a thread of the event loop's pool, not on Django's one sync thread: a
    hundred sockets joining at once queued a hundred auth reads there, and the tail's read of the first
    lines waited behind them (they reached the viewers 0.3 s late). Each pool thread has its own
    connection, released as after a request (CONN_MAX_AGE decides)."""
    return database_sync_to_async(func, thread_sensitive=False)


# The tails' reads of new lines run on threads of their own: on the loop's pool they queued behind
# the auth reads of sockets joining at once (a hundred viewers opening a job got their first line after
# every one of them had been authenticated, ~1.3 s here).
_TAIL_THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="log-tail")


def _on_tail_threads(func):
    return database_sync_to_async(func, thread_sensitive=False, executor=_TAIL_THREADS)


# A line read for the sockets: (seq, pod, its message as JSON), encoded once for every socket.
Line = tuple[int, str, str]


# PostgreSQL encodes each line's message itself (a quarter of the time of rows turned into Python values
# and encoded here): the same JSON values as the REST answer's lines (LogLine.data),
# with `ts` as Python's isoformat() writes it (microseconds only when not zero, "+00:00").
_TS_ISO = (  # the fraction always has six digits, so ".000000" can only be a zero fraction
    "replace(to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US'), '.000000', '') || '+00:00'"
)
_LINES_SQL = (  # the ts string needs no escaping (digits and -:T.+)
    """SELECT seq, pod, '{"seq":' || seq || ',"pod":' || to_json(pod) || ',"ts":'"""
    f""" || COALESCE('"' || {_TS_ISO} || '"', 'null') || ',"text":' || to_json(text) || '}}'"""
    f" FROM {LogLine._meta.db_table} WHERE job_id = %s AND seq > %s ORDER BY seq LIMIT %s"
)


def lines_after(job_id, after: int, limit: int = BATCH, *, in_database: bool | None = None) -> list[Line]:
    """Lines after ``after``, each with its message encoded once (every socket sends the same text).

    Rows, not model instances: on PostgreSQL the database writes each message, elsewhere (SQLite in
    standalone mode) Python does; both give the same values (tests/training/test_logs_socket.py).
    """
    if in_database is None:
        in_database = connection.vendor == "postgresql"
    if in_database:
        with connection.cursor() as cursor:
            cursor.execute(_LINES_SQL, [uuid.UUID(str(job_id)), after, limit])
            return cursor.fetchall()
    rows = (
        LogLine.objects.filter(job_id=job_id, seq__gt=after)
        .order_by("seq")
        .values_list("seq", "pod", "ts", "text")[:limit]
    )
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    return [(seq, pod, dumps(LogLine.data(seq, pod, ts, text))) for seq, pod, ts, text in rows]


_lines_after = _off_loop(lines_after)
_tail_lines_after = _on_tail_threads(lines_after)


def frame(messages: list[str], next_seq: int) -> str:
    """One frame of lines, the REST logs answer's shape, joined from the lines' encoded messages."""
    return f'{{"lines":[{",".join(messages)}],"next":{next_seq}}}'


def frames(lines: list[Line], after: int, pod: str = "") -> tuple[list[str], int]:
    """The frames of ``lines`` past ``after`` (of ``pod`` only, if given) and the new cursor: the last seq
    passed, filtered out or not, which each frame carries as `next`, so a reconnect with it neither
    repeats nor misses a line. Nothing past ``after``: no frame; past it but none of the pod: one empty
    frame, which still moves `next` on."""
    out: list[str] = []
    messages: list[str] = []
    size = 0
    cursor = after
    for seq, line_pod, message in lines:
        if seq <= cursor:
            continue
        if pod and line_pod != pod:
            cursor = seq
            continue
        if messages and (len(messages) >= FRAME_LINES or size + len(message) > FRAME_CHARS):
            out.append(frame(messages, cursor))
            messages, size = [], 0
        messages.append(message)
        size += len(message)
        cursor = seq
    if messages or cursor > after:
        out.append(frame(messages, cursor))
    return out, cursor


class Batch(list):
    """The lines one poll of a tail read, handed to every socket of the job; the frames of the whole batch
    are built once, for the sockets that take all of it (no pod filter, cursor just before it)."""

    _whole: tuple[list[str], int] | None = None

    def frames_after(self, after: int, pod: str) -> tuple[list[str], int]:
        if pod or not self or self[0][0] != after + 1:
            return frames(self, after, pod)
        if self._whole is None:
            self._whole = frames(self, after)
        return self._whole


@_on_tail_threads
def _job_status(job_id) -> tuple[str, int]:
    row = Job.objects.filter(pk=job_id).values_list("status", "last_seq").first()
    return row if row else (JobStatus.CANCELLED, 0)


class JobTail:
    """One reader of a job's new lines in this process, shared by every socket watching the job, and
    the job's newest lines it has seen: ``history`` holds every line with ``base`` < seq <= ``last``."""

    tails: dict[str, JobTail] = {}
    kept: OrderedDict[str, JobTail] = OrderedDict()  # ended jobs' tails nobody watches, oldest first

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        self.queues: set[asyncio.Queue] = set()
        self.last = 0
        self.base = 0
        self.history: list[Line] = []
        self.filling = asyncio.Lock()
        self.task: asyncio.Task | None = None
        self.ready = asyncio.Event()  # set once the task has read where the job stands
        # Set once the job has ended and every line it stored has been read (checked when a poll finds none).
        self.ended = False
        self.status = ""
        self.revived = False  # an ended job's kept tail, watched again: its end is read again

    @classmethod
    def of(cls, job_id: str) -> JobTail:
        tail = cls.tails.get(job_id)
        if tail is None and (tail := cls.kept.pop(job_id, None)) is not None:
            tail.revived = True
        if tail is None:
            tail = cls(job_id)
        cls.tails[job_id] = tail
        return tail

    async def subscribe(self) -> asyncio.Queue:
        """A queue of every batch the tail reads from now on; once this returns, ``last`` is where the
        tail stands (what the socket must catch up on, if its cursor is before it)."""
        queue: asyncio.Queue = asyncio.Queue()
        self.queues.add(queue)
        self.ensure_running()
        await self.ready.wait()
        return queue

    def ensure_running(self) -> None:
        # One task, however many sockets subscribe at once (the first ones all wait for its first read).
        if self.task is None or self.task.done():
            self.ready = asyncio.Event()
            self.task = asyncio.ensure_future(self._run())

    def unsubscribe(self, queue: asyncio.Queue) -> None:
        self.queues.discard(queue)

    def since(self, cursor: int) -> list[Line]:
        """The kept lines after ``cursor`` (which is at or past ``base``)."""
        return self.history[bisect.bisect_right(self.history, cursor, key=lambda line: line[0]) :]

    async def fill(self, cursor: int) -> bool:
        """Read the lines between ``cursor`` and ``base`` into the history, once for every socket that
        waits for them, if they fit; False if they do not (the socket reads the rows itself)."""
        async with self.filling:
            if cursor >= self.base:
                return True  # another socket's fill brought them
            base = self.base
            if base - cursor + len(self.history) > HISTORY_LINES:
                return False
            lines = [line for line in await _lines_after(self.job_id, cursor, base - cursor) if line[0] <= base]
            if self.base != base:  # the history moved on meanwhile: not contiguous with what was read
                return cursor >= self.base
            self.history[:0] = lines
            self.base = cursor
            return True

    def _keep(self, lines: Batch) -> None:
        self.history.extend(lines)
        if len(self.history) > 2 * HISTORY_LINES:  # trimmed in steps, not on every batch
            drop = len(self.history) - HISTORY_LINES
            self.base = self.history[drop - 1][0]
            del self.history[:drop]

    def _hand(self, lines: Batch) -> None:
        for queue in list(self.queues):
            queue.put_nowait(lines)

    async def _run(self) -> None:
        try:
            # Sockets catch up on older lines from the history or the rows. A job shown as ended has
            # stored every line (the collector's last read comes first), so a replay of it ends
            # without waiting for a poll. A kept tail's sockets start on its lines at once, while its
            # end is read again (no socket sends the end before that): any line stored since comes
            # in the loop's first batch.
            revived, self.revived = self.revived, False
            if revived:
                self.ended = False
                self.ready.set()
            self.status, last = await _job_status(self.job_id)
            if last < self.last or (last != self.last and not revived):  # a new tail starts at the end
                self.history, self.base, self.last = [], last, last
            self.ended = self.status in JobStatus.terminal() and last <= self.last
            if self.ended and revived:
                self._hand(Batch())  # wakes the sockets that caught up to send their end message
            self.ready.set()
            while self.queues:
                lines = await _tail_lines_after(self.job_id, self.last)
                if lines:
                    self.last = lines[-1][0]
                    batch = Batch(lines)
                    self._keep(batch)
                    self._hand(batch)
                elif not self.ended:
                    self.status, last_seq = await _job_status(self.job_id)
                    self.ended = self.status in JobStatus.terminal() and last_seq <= self.last
                    if self.ended:
                        self._hand(Batch())  # wakes the sockets to send their end message
                if len(lines) < BATCH:
                    await asyncio.sleep(_poll())
        finally:
            self.ready.set()  # a failed first read: the sockets read the rows and try the tail again
            if JobTail.tails.get(self.job_id) is self and not self.queues:
                del JobTail.tails[self.job_id]
                if self.ended and self.history:
                    JobTail.kept[self.job_id] = self
                    while len(JobTail.kept) > KEPT_TAILS:
                        JobTail.kept.popitem(last=False)


def _access(scope) -> Access | None:
    from instantstart.tenancy.authentication import resolve_token
    from instantstart.tenancy.teams import current_membership

    for name, value in scope.get("headers", []):
        if name == b"authorization":
            parts = value.decode("latin-1").split()
            if len(parts) == 2 and parts[0].lower() == "bearer":
                return resolve_token(parts[1], Via.API)
            return None
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return None

    class _Session:  # what current_membership reads: the team chosen in this session
        session = scope.get("session") or {}

    membership = current_membership(_Session, user)
    if membership is None:
        return None
    return Access(user=user, team=membership.team, role=membership.role, via=Via.UI)


# Access checks of sockets, per credential and job, for a few seconds: sockets that open together (a
# page reload, many tabs, a team's dashboard, an agent's reconnects) share one check instead of each
# making their own (a check costs ~10 ms of the pool's threads here). A check that refuses or fails is
# forgotten once done; a revoked token or a lost membership stops new sockets within this many seconds.
_CHECKS: dict[tuple, tuple[float, asyncio.Future]] = {}  # (credential, job id) -> (until, the check)


def _allowed_for() -> float:
    return float(getattr(settings, "TRAINING_SOCKET_ACCESS_CACHE_SECONDS", 5.0))


def _credential(scope) -> tuple | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            return ("token", hash_token(value.decode("latin-1")))
    session = scope.get("session")
    key = getattr(session, "session_key", None)
    return ("session", key) if key else None


@_off_loop
def _check_job_access(scope, job_id: str) -> str | int:
    """The id of the job the socket's caller may watch, or the code to close it with (one trip to a
    database thread: each trip takes a pooled connection)."""
    from .selectors import visible_job_id

    access = _access(scope)
    if access is None:
        return CLOSE_UNAUTHENTICATED
    try:
        return str(visible_job_id(access, job_id))
    except NotFound:
        return CLOSE_NOT_FOUND


async def _job_or_close_code(scope, job_id: str) -> str | int:
    credential = _credential(scope)
    if credential is None:
        return await _check_job_access(scope, job_id)
    key, now = (credential, job_id), time.monotonic()
    entry = _CHECKS.get(key)
    if entry is None or entry[0] <= now:
        if len(_CHECKS) > 10_000:  # old entries go in bulk; a busy server re-checks a few sockets
            _CHECKS.clear()
        entry = _CHECKS[key] = (now + _allowed_for(), asyncio.ensure_future(_check_job_access(scope, job_id)))
        entry[1].add_done_callback(lambda check: _forget_unless_allowed(key, entry, check))
    return await asyncio.shield(entry[1])  # a socket that goes away does not cancel the others' check


def _forget_unless_allowed(key: tuple, entry: tuple, check: asyncio.Future) -> None:
    if check.cancelled() or check.exception() is not None or not isinstance(check.result(), str):
        if _CHECKS.get(key) is entry:
            del _CHECKS[key]


class JobLogConsumer(AsyncWebsocketConsumer):
    """Streams a job's log lines after `after`, then live ones, to one viewer."""

    # No channel layer: lines come from the rows (see the module docstring); an alias that names no
    # configured layer keeps Channels from opening a layer channel per socket.
    channel_layer_alias = "none"

    async def connect(self) -> None:
        await self.accept()
        query = parse_qs(self.scope.get("query_string", b"").decode())
        try:
            self.cursor = max(0, int((query.get("after") or ["0"])[0]))
        except ValueError:
            self.cursor = 0
        self.pod = (query.get("pod") or [""])[0]
        job = await _job_or_close_code(self.scope, self.scope["url_route"]["kwargs"]["job"])
        if isinstance(job, int):
            await self.close(code=job)
            return
        self.job_id = job
        self.pump = asyncio.ensure_future(self._pump())

    async def disconnect(self, code) -> None:
        pump = getattr(self, "pump", None)
        if pump is not None:
            pump.cancel()

    async def _send_lines(self, lines: list[Line]) -> None:
        if isinstance(lines, Batch):
            texts, self.cursor = lines.frames_after(self.cursor, self.pod)
        else:
            texts, self.cursor = frames(lines, self.cursor, self.pod)
        for text in texts:
            await self.send(text_data=text)

    async def _catch_up(self, tail: JobTail) -> None:
        """The lines between the cursor and where the tail stands: from the tail's history (filled
        once for all the sockets that need older lines, when they fit), else from the rows."""
        while self.cursor < tail.last:
            if self.cursor >= tail.base or await tail.fill(self.cursor):
                await self._send_lines(tail.since(self.cursor))
                return  # the rest comes in the queue's batches
            lines = await _lines_after(self.job_id, self.cursor)
            if not lines:
                return
            await self._send_lines(lines)

    async def _pump(self) -> None:
        tail = JobTail.of(self.job_id)
        queue = await tail.subscribe()
        try:
            if self.cursor < tail.last:  # lines the tail will not hand this socket
                await self._catch_up(tail)
            while True:
                if queue.empty() and tail.ended and self.cursor >= tail.last:
                    await self.send(text_data=json.dumps({"status": tail.status, "next": self.cursor}))
                    return  # the socket stays open for the viewer; nothing more will come
                try:
                    batch = await asyncio.wait_for(queue.get(), timeout=_poll())
                except TimeoutError:
                    tail.ensure_running()  # a tail whose read failed starts again, from where the job stands:
                    if self.cursor < tail.last:  # what it skipped comes from the history or the rows
                        await self._catch_up(tail)
                    continue
                if batch and batch[0][0] > self.cursor + 1:
                    await self._catch_up(tail)  # a gap (this socket joined mid-batch)
                await self._send_lines(batch)
        finally:
            tail.unsubscribe(queue)
