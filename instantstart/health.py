"""GET /healthz: database, broker and worker health as JSON (200 when all are fine, else 503)."""

from __future__ import annotations

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET


def _database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True, "vendor": connection.vendor}
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "error": str(exc)}


def _broker() -> dict:
    from instantstart.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
            return {"ok": True, "transport": conn.transport_cls}
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "error": str(exc)}


def _workers() -> dict:
    from instantstart.operations.heartbeat import live_workers

    try:
        workers = live_workers()
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "error": str(exc)}
    return {"ok": bool(workers), "live": workers}


@require_GET
def healthz(request):
    checks = {"database": _database(), "broker": _broker(), "worker": _workers()}
    ok = all(check["ok"] for check in checks.values())
    return JsonResponse({"ok": ok, "checks": checks}, status=200 if ok else 503)
