"""An API server that stops answering does not hold the caller forever (the client's default waits)."""

from __future__ import annotations

import socket
import threading

import pytest
import urllib3
from kubernetes import client as k8s

from instantstart.cloud import kube


@pytest.fixture
def silent_server():
    """A TCP server on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_a_call_without_its_own_timeout_gets_the_default(silent_server, monkeypatch):
    monkeypatch.setattr(kube, "DEFAULT_TIMEOUT", urllib3.Timeout(connect=2, read=0.3))
    api = k8s.ApiClient(k8s.Configuration(host=silent_server))
    kube._default_timeout(api)
    with pytest.raises(urllib3.exceptions.HTTPError) as raised:
        k8s.CoreV1Api(api).list_namespace()
    assert "timed out" in str(raised.value).lower()


def test_a_call_with_its_own_timeout_keeps_it(silent_server, monkeypatch):
    monkeypatch.setattr(kube, "DEFAULT_TIMEOUT", urllib3.Timeout(connect=2, read=600))
    api = k8s.ApiClient(k8s.Configuration(host=silent_server))
    kube._default_timeout(api)
    with pytest.raises(urllib3.exceptions.HTTPError) as raised:
        k8s.CoreV1Api(api).list_namespace(_request_timeout=(2, 0.3))
    assert "timed out" in str(raised.value).lower()
