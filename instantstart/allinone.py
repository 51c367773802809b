"""python -m instantstart.allinone — the container's default command: the whole control plane in
one process tree, for a small team (the scaled form runs web, worker and beat separately).

Production settings (no debug, HTTPS behind a proxy, secure cookies) with the parts `make run`
has: the ASGI server, a Celery worker child and the operation sweep. PostgreSQL and Redis when
DATABASE_URL / REDIS_URL are set, else SQLite and the file broker under INSTANTSTART_VAR_DIR (the
image's volume). The sandbox cloud starts only when asked (INSTANTSTART_SANDBOX=true or
--sandbox): a real deployment talks to real AWS through each team's role.

On the first start it migrates and creates the admin account (INSTANTSTART_ADMIN_USERNAME,
password from INSTANTSTART_ADMIN_PASSWORD[_FILE] or generated into the volume); a worker that dies
is started again, and since operations are leased and swept, nothing it was doing is lost.
`--init-only` does the first-start work and exits (the compose file's one-shot `migrate` service).
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import sys
import threading
from pathlib import Path

log = logging.getLogger("instantstart.allinone")

WORKER_HOSTNAME = "allinone@%h"
# A worker that keeps dying is restarted after a growing pause, not in a tight loop.
RESTART_BACKOFF_SECONDS = (1, 2, 5, 10, 30)


def ensure_admin(var_dir: Path) -> str | None:
    """Create the first superuser unless one exists; returns the generated password (or None).

    The password comes from INSTANTSTART_ADMIN_PASSWORD (or its _FILE: the stack passes a Secrets
    Manager secret that way); without one it is generated and kept in the volume, readable by the
    owner only. An existing account is never changed.
    """
    from django.contrib.auth import get_user_model

    from instantstart.envvars import env_str

    User = get_user_model()
    if User.objects.filter(is_superuser=True).exists():
        return None
    username = env_str("INSTANTSTART_ADMIN_USERNAME", "admin")
    given = env_str("INSTANTSTART_ADMIN_PASSWORD")
    password = given or secrets.token_urlsafe(16)
    User.objects.create_superuser(username=username, email="", password=password)
    if given:
        log.info("created the admin account %r with the given password", username)
        return None
    path = var_dir / "admin-credentials.txt"
    path.write_text(f"username: {username}\npassword: {password}\n")
    path.chmod(0o600)
    return password


class WorkerWatch:
    """Starts the worker again when it exits on its own (OOM kill, crash) until told to stop."""

    def __init__(self, supervisor) -> None:
        self.supervisor = supervisor
        self.stopping = threading.Event()
        self.restarts = 0
        self._restarting = threading.Lock()

    def start(self) -> None:
        threading.Thread(target=self._loop, name="worker-watch", daemon=True).start()

    def stop(self) -> None:
        self.stopping.set()
        with self._restarting:  # a restart under way finishes first, so its worker is stopped too
            pass

    def _loop(self) -> None:
        while not self.stopping.wait(1.0):
            worker = self.supervisor.worker
            if worker is None or worker.poll() is None:
                continue
            pause = RESTART_BACKOFF_SECONDS[min(self.restarts, len(RESTART_BACKOFF_SECONDS) - 1)]
            log.warning("celery worker exited with %s; starting another in %ss", worker.returncode, pause)
            if self.stopping.wait(pause):
                return
            with self._restarting:
                if self.stopping.is_set():
                    return
                self.restarts += 1
                self.supervisor.start_worker(hostname=WORKER_HOSTNAME, log_to_file=False)


def main(argv: list[str] | None = None) -> int:
    from instantstart.envvars import env_bool

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "3099")))
    parser.add_argument("--host", default=os.environ.get("HOST", "0.0.0.0"))
    parser.add_argument(
        "--sandbox",
        action="store_true",
        default=env_bool("INSTANTSTART_SANDBOX", False),
        help="Also start the emulated cloud (for trying InstantStart out; teams on the sandbox use it).",
    )
    parser.add_argument("--init-only", action="store_true", help="Migrate, create the admin account, exit.")
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "instantstart.settings")
    os.environ.setdefault("INSTANTSTART_MODE", "production")
    # Read by the settings of this process and of the worker child it starts (the image sets it
    # too, so `docker exec … manage.py` sees the same state; compose's scaled services say false).
    os.environ.setdefault("INSTANTSTART_ALL_IN_ONE", "true")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import django

    django.setup()
    from django.conf import settings

    from instantstart.standalone.bootstrap import migrate
    from instantstart.standalone.supervisor import Supervisor

    var_dir = Path(settings.VAR_DIR)
    var_dir.mkdir(parents=True, exist_ok=True)
    database = settings.DATABASES["default"]
    log.info(
        "database %s, broker %s, state in %s",
        database["ENGINE"].rsplit(".", 1)[-1],
        settings.CELERY_BROKER_URL.split("://", 1)[0],
        var_dir,
    )
    migrate()
    password = ensure_admin(var_dir)
    if password:
        print(f"  Admin login: admin / {password}   (also saved in {var_dir / 'admin-credentials.txt'})", flush=True)
    if args.init_only:
        return 0

    supervisor = Supervisor(var_dir=var_dir)
    if args.sandbox:
        supervisor.start_sandbox(Path(settings.SANDBOX_STATE_DIR), settings.SANDBOX_SPEEDUP)
    else:
        log.info("sandbox: off (teams reach AWS through their roles; --sandbox or INSTANTSTART_SANDBOX=true starts it)")
    supervisor.start_worker(hostname=WORKER_HOSTNAME, log_to_file=False)
    watch = WorkerWatch(supervisor)
    watch.start()
    supervisor.start_sweep(settings.OPERATIONS["SWEEP_INTERVAL_SECONDS"])
    # uvicorn shuts down gracefully on SIGTERM (docker stop) and then raises the signal again:
    # this handler turns that into an exit that still stops the worker below.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    log.info("serving on %s:%s", args.host, args.port)
    try:
        supervisor.serve(args.host, args.port)
    except KeyboardInterrupt:
        pass
    finally:
        watch.stop()
        supervisor.stop()
    return 0


def _exit_on_signal(signum, frame) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    sys.exit(main())
