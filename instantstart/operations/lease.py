"""The engine's statements on an operation's row: take the lease, and the writes made under it.

A lease is taken with a conditional UPDATE (compare-and-swap on ``lease_token``) and every write
under it repeats the condition, so a worker that lost its lease (it ran past ``lease_until`` and
another worker took over) changes nothing. Each function here is one round trip on PostgreSQL:
the write to the operation and the writes to its phases are one statement (data-modifying CTEs,
``UPDATE … RETURNING``). SQLite (standalone) has no writable CTEs, so the same writes run one after
the other inside one transaction; SQLite lets one writer in at a time, so that is just as safe.

The SQL is written out because an advance is the hot path of every worker: the ORM would cost
more Python per advance than the round trips it issues (see bench/engine.py).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Field, Model

from .models import ACTIVE, Operation, OperationStatus, Phase, PhaseStatus


@dataclass(frozen=True)
class Sql:
    """A SET value written as SQL (``advance_count + 1``, ``COALESCE(started_at, %s)``).

    Its params are prepared for the database like a value of the column it sets.
    """

    text: str
    params: tuple = ()


@functools.cache
def _fields(model: type[Model]) -> tuple[Field, ...]:
    return tuple(model._meta.concrete_fields)


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


# The SQL text depends only on the database vendor and on which columns a statement sets: built
# once per shape (an advance is the hot path, and quoting names costs more than it seems).


@functools.cache
def _table(vendor: str, model: type[Model]) -> str:
    return _q(model._meta.db_table)


@functools.cache
def _columns(vendor: str, model: type[Model], alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + _q(field.column) for field in _fields(model))


@functools.cache
def _readers(vendor: str, model: type[Model]) -> tuple[tuple, ...]:
    # What the ORM's compiler applies to each column it reads (e.g. SQLite's text datetimes, JSON).
    out = []
    for field in _fields(model):
        column = field.get_col(model._meta.db_table)
        out.append((column, tuple(connection.ops.get_db_converters(column) + field.get_db_converters(connection))))
    return tuple(out)


@functools.cache
def _attnames(model: type[Model]) -> list[str]:
    return [field.attname for field in _fields(model)]


def _instance(model: type[Model], values: Iterable[Any]):
    converted = []
    for value, (column, converters) in zip(values, _readers(connection.vendor, model), strict=True):
        for converter in converters:
            value = converter(value, column, connection)
        converted.append(value)
    return model.from_db(connection.alias, _attnames(model), converted)


def _prep(model: type[Model], name: str, value: Any) -> Any:
    return model._meta.get_field(name).get_db_prep_save(value, connection)


@functools.cache
def _set_sql(vendor: str, model: type[Model], shape: tuple[tuple[str, str | None], ...]) -> str:
    parts = []
    for name, text in shape:
        column = _q(model._meta.get_field(name).column)
        parts.append(f"{column} = {text if text is not None else '%s'}")
    return ", ".join(parts)


def _set_clause(model: type[Model], values: dict[str, Any]) -> tuple[tuple, list]:
    shape, params = [], []
    for name, value in values.items():
        if isinstance(value, Sql):
            shape.append((name, value.text))
            params.extend(_prep(model, name, param) for param in value.params)
        else:
            shape.append((name, None))
            params.append(_prep(model, name, value))
    return tuple(shape), params


def _pk(value: Any) -> Any:
    return Operation._meta.pk.get_db_prep_value(value, connection)


def _token(value: uuid.UUID | None) -> Any:
    return Operation._meta.get_field("lease_token").get_db_prep_value(value, connection)


def _when(value: datetime) -> Any:
    return Operation._meta.get_field("lease_until").get_db_prep_value(value, connection)


def _writable_ctes(vendor: str) -> bool:
    return vendor == "postgresql"


# --- taking the lease -----------------------------------------------------------------------


@functools.cache
def _current_phase_sql(vendor: str) -> str:
    """An operation's current phase: the first one not succeeded ({op} names the operation's id)."""
    return (
        f"SELECT {_columns(vendor, Phase, 'p')} FROM {_table(vendor, Phase)} p WHERE p.{_q('operation_id')} = {{op}} "
        f"AND p.{_q('status')} <> %s ORDER BY p.{_q('index')} LIMIT 1"
    )


@functools.cache
def _claim_sql(vendor: str) -> tuple[str, ...]:
    """The claim: one statement with writable CTEs, else the UPDATE and the phase's SELECT."""
    op = _table(vendor, Operation)
    status, cancel, started = _q("status"), _q("cancel_requested"), _q("started_at")
    update = (
        f"UPDATE {op} SET {_q('lease_token')} = %s, {_q('lease_until')} = %s, "
        f"{_q('advance_count')} = {_q('advance_count')} + 1, {_q('enqueued_at')} = NULL, "
        f"{status} = CASE WHEN {status} = %s AND NOT {cancel} THEN %s ELSE {status} END, "
        f"{started} = CASE WHEN {started} IS NULL AND NOT {cancel} THEN %s ELSE {started} END "
        f"WHERE {_q('id')} = %s AND {status} IN (%s, %s) "
        f"AND ({_q('lease_until')} IS NULL OR {_q('lease_until')} < %s) "
        f"AND ({_q('wake_at')} IS NULL OR {_q('wake_at')} <= %s) "
        f"RETURNING {_columns(vendor, Operation)}"
    )
    current = _current_phase_sql(vendor)
    if _writable_ctes(vendor):
        return (
            f"WITH c AS ({update}) SELECT {_columns(vendor, Operation, 'c')}, {_columns(vendor, Phase, 'p')} "
            f"FROM c LEFT JOIN LATERAL ({current.format(op='c.' + _q('id'))}) p ON TRUE",
        )
    return update, current.format(op="%s")


def claim(operation_id: str | uuid.UUID, token: uuid.UUID, *, now: datetime, until: datetime, due_by: datetime):
    """Take the lease of a due, free, active operation; return it with its current phase, or None.

    The same statement counts the advance, marks the message taken (``enqueued_at``) and moves a
    pending operation to running; the current phase is the first one not succeeded.
    """
    vendor = connection.vendor
    pk = _pk(operation_id)
    params = [_token(token), _when(until), OperationStatus.PENDING.value, OperationStatus.RUNNING.value]
    params += [_when(now), pk, *ACTIVE, _when(now), _when(due_by)]
    succeeded = PhaseStatus.SUCCEEDED.value
    return _with_phase(_claim_sql(vendor), pk, [*params, succeeded], params)


def _with_phase(statements: tuple[str, ...], pk, joined: list, alone: list):
    """Run a statement returning the operation joined with its current phase (or, without writable
    CTEs, the operation's statement with ``alone`` and then the phase's SELECT): (operation, phase)."""
    succeeded = PhaseStatus.SUCCEEDED.value
    width = len(_fields(Operation))
    with connection.cursor() as cursor:
        if len(statements) == 1:
            cursor.execute(statements[0], joined)
            row = cursor.fetchone()
            if row is None:
                return None
            op_values, phase_values = row[:width], row[width:]
        else:
            cursor.execute(statements[0], alone)
            op_values = cursor.fetchone()
            if op_values is None:
                return None
            cursor.execute(statements[1], [pk, succeeded])
            phase_values = cursor.fetchone()
    operation = _instance(Operation, op_values)
    phase = _instance(Phase, phase_values) if phase_values and phase_values[0] is not None else None
    return operation, phase


@functools.cache
def _load_sql(vendor: str) -> tuple[str, ...]:
    """Reading an operation this worker keeps leased: one SELECT with its current phase (or two)."""
    op = _table(vendor, Operation)
    where = f"WHERE o.{_q('id')} = %s AND o.{_q('lease_token')} = %s AND o.{_q('status')} IN (%s, %s)"
    current = _current_phase_sql(vendor)
    if _writable_ctes(vendor):
        return (
            f"SELECT {_columns(vendor, Operation, 'o')}, {_columns(vendor, Phase, 'p')} FROM {op} o "
            f"LEFT JOIN LATERAL ({current.format(op='o.' + _q('id'))}) p ON TRUE {where}",
        )
    return f"SELECT {_columns(vendor, Operation, 'o')} FROM {op} o {where}", current.format(op="%s")


def load(operation_id: str | uuid.UUID, token: uuid.UUID):
    """The operation (and its current phase) while ``token`` still holds its lease, else None.

    What a worker reads before the next step of an operation it kept leased between two polls
    (holding.py): no write, since the lease is already this worker's.
    """
    vendor, pk = connection.vendor, _pk(operation_id)
    params = [pk, _token(token), *ACTIVE]
    return _with_phase(_load_sql(vendor), pk, [PhaseStatus.SUCCEEDED.value, *params], params)


# --- writes under the lease -----------------------------------------------------------------


@dataclass
class Written:
    """What a write under the lease saw: whether the lease was still ours, and fresh facts."""

    held: bool
    cancel_requested: bool = False


LOST = Written(held=False)

Shape = tuple[tuple[str, str | None], ...]


@functools.cache
def _write_sql(vendor: str, op_shape: Shape, phase_shapes: tuple[Shape, ...]):
    """The statements of one write: one with writable CTEs, else the operation's UPDATE first."""
    op, phase = _table(vendor, Operation), _table(vendor, Phase)
    op_update = (
        f"UPDATE {op} SET {_set_sql(vendor, Operation, op_shape)} WHERE {_q('id')} = %s "
        f"AND {_q('lease_token')} = %s RETURNING {_q('cancel_requested')}"
    )
    phase_updates = [
        f"UPDATE {phase} SET {_set_sql(vendor, Phase, shape)} WHERE {_q('id')} = %s" for shape in phase_shapes
    ]
    if not _writable_ctes(vendor):
        return op_update, tuple(phase_updates)
    # Every sub-statement of a WITH runs exactly once against the same snapshot; "EXISTS (SELECT 1
    # FROM o)" makes each phase write depend on the operation's conditional one.
    guard = " AND EXISTS (SELECT 1 FROM o)"
    ctes = [f"o AS ({op_update})", *(f"p{i} AS ({sql}{guard})" for i, sql in enumerate(phase_updates))]
    return f"WITH {', '.join(ctes)} SELECT o.{_q('cancel_requested')} FROM o"


def write(
    operation_id: str | uuid.UUID,
    token: uuid.UUID,
    *,
    operation: dict[str, Any],
    phases: dict[int, dict[str, Any]] | None = None,
) -> Written:
    """Update the operation (and phases by pk) only while ``token`` still holds its lease.

    Returns ``LOST`` when the lease is no longer ours; then nothing was written.
    """
    vendor, pk = connection.vendor, _pk(operation_id)
    op_shape, op_params = _set_clause(Operation, operation)
    op_params += [pk, _token(token)]
    phase_shapes, phase_params = [], []
    for phase_pk, values in (phases or {}).items():
        shape, params = _set_clause(Phase, values)
        phase_shapes.append(shape)
        phase_params.append([*params, phase_pk])
    sql = _write_sql(vendor, op_shape, tuple(phase_shapes))
    with connection.cursor() as cursor:
        if isinstance(sql, str):
            cursor.execute(sql, [*op_params, *(p for params in phase_params for p in params)])
            row = cursor.fetchone()
            return LOST if row is None else Written(True, bool(row[0]))
        op_update, phase_updates = sql
        with transaction.atomic():
            cursor.execute(op_update, op_params)
            row = cursor.fetchone()
            if row is None:
                return LOST
            for statement, params in zip(phase_updates, phase_params, strict=True):
                cursor.execute(statement, params)
            return Written(True, bool(row[0]))


@functools.cache
def _phase_at_sql(vendor: str) -> str:
    return (
        f"SELECT o.{_q('cancel_requested')}, {_columns(vendor, Phase, 'p')} FROM {_table(vendor, Operation)} o "
        f"LEFT JOIN {_table(vendor, Phase)} p ON p.{_q('operation_id')} = o.{_q('id')} AND p.{_q('index')} = %s "
        f"WHERE o.{_q('id')} = %s AND o.{_q('lease_token')} = %s"
    )


def phase_at(operation_id: str | uuid.UUID, token: uuid.UUID, index: int) -> tuple[bool, Phase | None] | None:
    """(cancel requested?, the phase at ``index``) while ``token`` holds the lease, else None (one SELECT)."""
    with connection.cursor() as cursor:
        cursor.execute(_phase_at_sql(connection.vendor), [index, _pk(operation_id), _token(token)])
        row = cursor.fetchone()
    if row is None:
        return None
    return bool(row[0]), (_instance(Phase, row[1:]) if row[1] is not None else None)


def record_state(phase: Phase, token: uuid.UUID | None, state: dict) -> None:
    """Save a phase's state at once, only while ``token`` holds the operation's lease (one statement).

    Without a token (a step run outside the engine) the state is saved unconditionally.
    """
    queryset = Phase.objects.filter(pk=phase.pk)
    if token is not None:
        queryset = queryset.filter(operation__lease_token=token)
    if not queryset.update(state=state):
        raise LeaseLost(f"operation {phase.operation_id} is no longer leased by this worker")


class LeaseLost(Exception):
    """The operation's lease passed to another worker while this one ran a step: stop, write nothing."""
