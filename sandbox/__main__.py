"""python -m sandbox [--port 0] [--state DIR] [--speedup N] [--region R]

Runs in the foreground. The first stdout line is a JSON object (aws_endpoint, region, ...).
Ctrl-C / SIGTERM saves the state and exits.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=int(os.environ.get("SANDBOX_PORT", "0")))
    ap.add_argument("--state", default=os.environ.get("SANDBOX_STATE_DIR"), help="state directory (persisted)")
    ap.add_argument("--speedup", type=float, default=None, help="divide real durations (env SANDBOX_SPEEDUP, 20)")
    ap.add_argument("--region", default=os.environ.get("SANDBOX_REGION", "us-west-2"))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")

    from sandbox.server import Sandbox

    sb = Sandbox(args.state, port=args.port, speedup=args.speedup, region=args.region).start()
    sys.stdout.write(json.dumps(sb.info()) + "\n")
    sys.stdout.flush()
    done = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    while not done.wait(0.5):
        pass
    sb.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
