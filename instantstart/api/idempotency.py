"""`Idempotency-Key` for every mutating REST call (and MCP tool, which dispatches into REST).

The first request with a key reserves it (a unique row) with a fingerprint of the request
(method, path, query and body), runs, and stores its 2xx answer; a repeat of the same request gets
the stored answer and changes nothing. A repeat while the first still runs gets 409; the same key
with another method, path, query or body gets 422 ``idempotency_key_reused`` naming the first
request — an agent that retries with a changed body learns it, rather than getting the first
answer back. Failed requests release the key so a corrected request can use it.

The row's ``body`` holds ``{"fingerprint": …, "answer": …}`` (the answer once complete).
"""

from __future__ import annotations

import hashlib
import json

from django.db import IntegrityError, transaction
from rest_framework import exceptions, status
from rest_framework.response import Response

from instantstart.errors import StateConflict
from instantstart.operations.audit import scrub
from instantstart.operations.models import IdempotencyRecord

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 200
SAFE = {"GET", "HEAD", "OPTIONS"}


class Replay(Exception):
    def __init__(self, record: IdempotencyRecord) -> None:
        self.record = record


class KeyReused(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "idempotency_key_reused"


def reserve(request, team) -> IdempotencyRecord | None:
    """Reserve the request's key, or raise Replay / StateConflict / KeyReused. None without a key."""
    key = request.headers.get(HEADER, "").strip()
    if not key or request.method in SAFE:
        return None
    if len(key) > MAX_KEY_LENGTH:
        raise exceptions.ValidationError({HEADER: [f"At most {MAX_KEY_LENGTH} characters."]})
    request_print = fingerprint(request)
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(
                team=team, key=key, method=request.method, path=request.path, body={"fingerprint": request_print}
            )
    except IntegrityError:
        record = IdempotencyRecord.objects.get(team=team, key=key)
    if (record.method, record.path) != (request.method, request.path):
        raise KeyReused(f"This Idempotency-Key was already used for {record.method} {record.path}.")
    stored = record.body.get("fingerprint") if isinstance(record.body, dict) else None
    if stored is not None and stored != request_print:
        raise KeyReused(
            f"This Idempotency-Key was already used for {record.method} {record.path} with another body or "
            "query: send a new key for a different request."
        )
    if record.status_code is None:
        raise StateConflict("A request with this Idempotency-Key is still being processed.")
    raise Replay(record)


def complete(record: IdempotencyRecord, response: Response, redact: tuple[str, ...] = ()) -> None:
    if 200 <= response.status_code < 300:
        body = response.data
        if redact and isinstance(body, dict):
            body = {k: v for k, v in body.items() if k not in redact}
        stored = {"fingerprint": record.body["fingerprint"], "answer": scrub(body)}
        IdempotencyRecord.objects.filter(pk=record.pk).update(status_code=response.status_code, body=stored)
    else:
        IdempotencyRecord.objects.filter(pk=record.pk).delete()


def fingerprint(request) -> str:
    """What makes two requests the same: method, path, query and the parsed body (key order and
    whitespace aside)."""
    canonical = json.dumps(
        {
            "method": request.method,
            "path": request.path,
            "query": sorted(request.query_params.lists()),
            "body": request.data,
        },
        sort_keys=True,
        default=str,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def replay_response(record: IdempotencyRecord) -> Response:
    answer = (
        record.body.get("answer") if isinstance(record.body, dict) and "fingerprint" in record.body else record.body
    )
    response = Response(answer, status=record.status_code)
    response["Idempotent-Replayed"] = "true"
    return response
