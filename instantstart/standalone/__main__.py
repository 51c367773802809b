"""python -m instantstart.standalone [--port 3099] — what `make run` starts.

One process tree: this process runs the ASGI server (uvicorn), the sandbox cloud and the
operation sweep in threads; the Celery worker is a child process on the file-system broker.
Ctrl-C stops all of it; everything lives under var/, so the next run resumes where this one stopped.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

log = logging.getLogger("instantstart.standalone")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "3099")))
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--no-sandbox", action="store_true", help="Do not start the sandbox cloud.")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "instantstart.settings")
    os.environ.setdefault("INSTANTSTART_MODE", "standalone")
    import django

    django.setup()
    from django.conf import settings

    from instantstart.standalone.bootstrap import ensure_demo, migrate
    from instantstart.standalone.supervisor import Supervisor

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    var_dir = Path(settings.VAR_DIR)
    migrate()
    username, password = ensure_demo(var_dir)

    supervisor = Supervisor(var_dir=var_dir)
    if not args.no_sandbox:
        supervisor.start_sandbox(Path(settings.SANDBOX_STATE_DIR), settings.SANDBOX_SPEEDUP)
    supervisor.start_worker()
    supervisor.start_sweep(settings.OPERATIONS["SWEEP_INTERVAL_SECONDS"])

    url = f"http://{args.host}:{args.port}"
    print("", flush=True)
    print(f"  InstantStart is starting at {url}", flush=True)
    if password:
        print(f"  Admin login: {username} / {password}   (also saved in {var_dir / 'admin-credentials.txt'})")
    else:
        print(f"  Admin login: {username} (password in {var_dir / 'admin-credentials.txt'} if you kept it;")
        print("   reset it with: .venv/bin/python manage.py changepassword admin)")
    print("  Token for REST/MCP: .venv/bin/python manage.py create_token --team demo --user admin")
    print("  Ctrl-C stops everything.\n", flush=True)
    try:
        supervisor.serve(args.host, args.port)
    except KeyboardInterrupt:
        pass  # uvicorn re-raises Ctrl-C after its graceful shutdown; ours follows
    finally:
        supervisor.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
