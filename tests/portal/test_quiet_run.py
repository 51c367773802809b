"""A normal `make run` says nothing alarming: no StreamingHttpResponse warning per static file, no
kombu "No hostname was supplied", no Celery superuser warning."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.timeout(180)


def test_make_run_serves_pages_and_static_files_without_warnings(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(INSTANTSTART_MODE="standalone", INSTANTSTART_VAR_DIR=str(tmp_path), SANDBOX_SPEEDUP="1000")
    log = tmp_path / "run.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "instantstart.standalone", "--port", str(port)],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=5) as response:
                    if b'"worker": {"ok": true' in response.read():
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.5)
        for path in ("/login/", "/static/instantstart/portal.css", "/static/instantstart/vendor/htmx.min.js"):
            with urllib.request.urlopen(base + path, timeout=5) as response:
                assert response.status == 200 and response.read()
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(40)
    printed = log.read_text() + (tmp_path / "worker.log").read_text()
    for noise in ("StreamingHttpResponse", "No hostname was supplied", "superuser privileges", "Traceback"):
        assert noise not in printed, noise
