"""python -m instantstart.probe web|worker|beat — container health checks: exit 0 when healthy.

The image's HEALTHCHECK and the compose file's healthchecks run these, each in the container it
checks:
- ``web``: GET /healthz on this container's port (database, broker and a live worker), as a
  load balancer would; the all-in-one container is healthy exactly when this is.
- ``worker``: this container's worker has written its heartbeat lately (the row /healthz reads).
- ``beat``: the beat schedule file was written lately (beat saves it while it runs the sweep).
"""

from __future__ import annotations

import os
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

BEAT_SCHEDULE = os.environ.get("INSTANTSTART_BEAT_SCHEDULE", "/tmp/beat/celerybeat-schedule")
# Celery beat saves its schedule every 3 minutes while running.
BEAT_STALE_SECONDS = 300


def web() -> tuple[bool, str]:
    port = os.environ.get("PORT", "3099")
    # Loopback names are always allowed hosts in production; the redirect to HTTPS exempts /healthz.
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return response.status == 200, response.read().decode()[:500]
    except urllib.error.HTTPError as exc:
        return False, f"{exc.code}: {exc.read().decode()[:500]}"
    except OSError as exc:
        return False, str(exc)


def worker() -> tuple[bool, str]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "instantstart.settings")
    import django

    django.setup()
    from instantstart.operations.heartbeat import live_workers

    # Celery names a worker <prefix>@<host>; a container's host name is its own (Docker sets HOSTNAME).
    suffix = "@" + (os.environ.get("HOSTNAME") or socket.gethostname())
    live = live_workers()
    return any(name.endswith(suffix) for name in live), f"live workers: {', '.join(live) or 'none'}"


def beat() -> tuple[bool, str]:
    # The dbm backend decides the file's suffix (none, .db, .dat/.dir).
    files = list(Path(BEAT_SCHEDULE).parent.glob(Path(BEAT_SCHEDULE).name + "*"))
    if not files:
        return False, f"no beat schedule at {BEAT_SCHEDULE}"
    age = time.time() - max(f.stat().st_mtime for f in files)
    return age < BEAT_STALE_SECONDS, f"beat schedule written {age:.0f}s ago"


PROBES = {"web": web, "worker": worker, "beat": beat}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in PROBES:
        print(f"usage: python -m instantstart.probe {'|'.join(PROBES)}", file=sys.stderr)
        return 2
    healthy, detail = PROBES[argv[0]]()
    print(("healthy: " if healthy else "unhealthy: ") + detail)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
