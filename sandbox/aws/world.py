"""The AWS side's own state (what moto lacks), call counts, the clock and persistence.

Everything AWS-side (moto backends included) is mutated only while holding `World.lock`: requests
and the controller tick are short, and one lock makes snapshots (pickling moto) consistent.
"""

from __future__ import annotations

import base64
import collections
import copyreg
import logging
import os
import pickle
import random
import string
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox.faults import Faults
from sandbox.isolation import Contained

log = logging.getLogger("sandbox.aws")

# Real-world durations in seconds; divided by the speedup.
DURATIONS = {
    "eks_cluster_create": 600.0,
    "eks_cluster_delete": 300.0,
    "eks_cluster_update": 300.0,
    "nodegroup_create": 150.0,
    "nodegroup_delete": 120.0,
    "nodegroup_update": 120.0,
    "addon_create": 120.0,
    "addon_update": 60.0,
    "addon_delete": 60.0,
    "hp_create": 480.0,
    "hp_update": 300.0,
    "hp_software_update": 600.0,
    "hp_delete": 180.0,
    "hp_node_reboot": 240.0,
    "hp_node_replace": 420.0,
    "hp_node_delete": 120.0,
    "nat_gateway": 60.0,
    "fsx_create": 360.0,
    "mlflow_create": 1200.0,
    "mlflow_update": 600.0,
    "mlflow_stop": 180.0,
    "mlflow_start": 420.0,
    "mlflow_delete": 300.0,
    "mlflow_app_create": 300.0,
    "training_plan": 30.0,
}

SNAPSHOT = "aws-state.pickle"
_TIMER_KEYS = {"due", "_due", "_ready_at", "_dhc_at", "_op_due"}

# A few moto backends hold locks (e.g. ECR); a restored backend just needs fresh ones.
copyreg.pickle(type(threading.Lock()), lambda _lock: (threading.Lock, ()))
copyreg.pickle(type(threading.RLock()), lambda _lock: (threading.RLock, ()))


class World:
    def __init__(self, speedup: float = 20.0, region: str = "us-west-2", state_dir: Path | None = None):
        self.lock = threading.RLock()
        self.speedup = max(float(speedup), 0.001)
        self.region = region
        self.state_dir = Path(state_dir) if state_dir else None
        self.base_url = ""  # "http://127.0.0.1:PORT", set once the server is bound
        # cluster key -> its API server's endpoint (a port of its own), set by the running Sandbox
        self.endpoint_of: Callable[[str], str] | None = None
        # EKS cluster ARN -> instance id -> the node dict last handed to the Kubernetes half
        self.node_views: dict[str, dict[str, dict[str, Any]]] = {}
        self.faults = Faults()
        self.calls: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.calls_lock = threading.Lock()
        # Our own resources: kind -> account -> region -> name/id -> record (plain, picklable data)
        self.state: dict[str, Any] = {"resources": {}, "ca": None, "version": 1}
        self.dirty = False
        self._unpicklable_warned: set[str] = set()
        # What the Kubernetes half last observed per cluster ("{account}/{region}/{cluster}" -> report,
        # see CONTRACT.md; pod_ip_demand among it); written by the server after each tick, never persisted.
        self.kube_reports: dict[str, dict[str, Any]] = {}
        # failures of the controller tick, contained per account/cluster and logged once per change
        self.contained = Contained(log)

    # ---- time -------------------------------------------------------------------------------
    def now(self) -> float:
        return time.time()

    def due(self, duration_key: str, factor: float = 1.0) -> float:
        return self.now() + DURATIONS[duration_key] * factor / self.speedup

    def advance(self, real_seconds: float | None = None) -> int:
        """Skip time: every pending transition happens `real_seconds` (real-world seconds) sooner, or
        all of them at the next tick when None. Returns how many timers moved."""
        now = self.now()
        shift = None if real_seconds is None else float(real_seconds) / self.speedup
        moved = 0

        def walk(obj: Any) -> None:
            nonlocal moved
            if isinstance(obj, dict):
                for k, v in obj.items():
                    if k in _TIMER_KEYS and isinstance(v, (int, float)) and v > now:
                        obj[k] = now if shift is None else max(now, v - shift)
                        moved += 1
                    elif isinstance(v, (dict, list)):
                        walk(v)
            elif isinstance(obj, list):
                for v in obj:
                    walk(v)

        with self.lock:
            walk(self.state["resources"])
        return moved

    # ---- own resources ------------------------------------------------------------------------
    def table(self, kind: str, account: str, region: str) -> dict[str, Any]:
        res = self.state["resources"]
        return res.setdefault(kind, {}).setdefault(account, {}).setdefault(region, {})

    def tables(self, kind: str) -> list[tuple[str, str, dict[str, Any]]]:
        out = []
        for account, regions in self.state["resources"].get(kind, {}).items():
            for region, tbl in regions.items():
                out.append((account, region, tbl))
        return out

    def touch(self) -> None:
        self.dirty = True

    # ---- call counting -----------------------------------------------------------------------
    def count_call(self, account: str, service: str, action: str) -> None:
        with self.calls_lock:
            self.calls[account][f"{service}:{action}"] += 1

    def get_calls(self, account: str | None = None) -> dict[str, int]:
        with self.calls_lock:
            if account:
                return dict(self.calls.get(account, {}))
            total: collections.Counter[str] = collections.Counter()
            for c in self.calls.values():
                total.update(c)
            return dict(total)

    def reset_calls(self, account: str | None = None) -> None:
        with self.calls_lock:
            if account:
                self.calls.pop(account, None)
            else:
                self.calls.clear()

    # ---- the cluster CA (a real self-signed certificate: kubectl/client-go parse it even over http)
    def ca_data(self) -> str:
        if not self.state.get("ca"):
            self.state["ca"] = _make_ca_pem()
        return self.state["ca"]

    # ---- persistence ---------------------------------------------------------------------------
    def save(self) -> None:
        if not self.state_dir:
            return
        from moto.core.base_backend import BackendDict

        self.state_dir.mkdir(parents=True, exist_ok=True)
        with self.lock:
            moto_state: dict[str, dict[str, dict[str, Any]]] = {}
            for bd in list(BackendDict._instances):
                accounts = {a: dict(asb) for a, asb in bd.items() if len(asb)}
                if accounts:
                    moto_state[bd.service_name] = accounts
            old = sys.getrecursionlimit()
            sys.setrecursionlimit(max(old, 20000))
            try:
                try:  # one pickle keeps references shared between services intact
                    blob = pickle.dumps({"moto": moto_state, "world": self.state}, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:
                    blob = pickle.dumps(
                        {"moto": self._picklable(moto_state), "world": self.state}, protocol=pickle.HIGHEST_PROTOCOL
                    )
            finally:
                sys.setrecursionlimit(old)
            self.dirty = False
        tmp = self.state_dir / (SNAPSHOT + ".tmp")
        tmp.write_bytes(blob)
        os.replace(tmp, self.state_dir / SNAPSHOT)

    def _picklable(self, moto_state: dict[str, Any]) -> dict[str, Any]:
        """Drop the (rare) moto services whose objects cannot be pickled, so the rest still persists."""
        out = {}
        for service, accounts in moto_state.items():
            try:
                pickle.dumps(accounts, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as e:
                if service not in self._unpicklable_warned:
                    self._unpicklable_warned.add(service)
                    log.warning(
                        "sandbox: moto service %s cannot be persisted (%s); it starts empty after a restart", service, e
                    )
                continue
            out[service] = accounts
        return out

    def load(self) -> bool:
        if not self.state_dir or not (self.state_dir / SNAPSHOT).exists():
            return False
        from moto.backends import get_backend

        path = self.state_dir / SNAPSHOT
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 20000))
        try:
            data = pickle.loads(path.read_bytes())
        except Exception:  # unreadable (e.g. written by another moto version): keep it aside, start empty
            bad = path.with_name(f"{SNAPSHOT}.unreadable-{int(time.time())}")
            os.replace(path, bad)
            log.exception("sandbox: could not load %s; moved it to %s and started with an empty AWS state", path, bad)
            return False
        finally:
            sys.setrecursionlimit(old)
        with self.lock:
            for service_name, accounts in data["moto"].items():
                bd = _backend_dict_for(service_name, get_backend)
                if bd is None:
                    log.warning("snapshot has unknown moto service %s; skipped", service_name)
                    continue
                for account, regions in accounts.items():
                    asb = bd[account]
                    for region, backend in regions.items():
                        asb[region] = backend
            self.state = data["world"]
        return True


def _backend_dict_for(service_name: str, get_backend: Any) -> Any:
    from moto.backend_index import backend_url_patterns

    candidates = [service_name, service_name.replace("-", ""), service_name.replace("-", "_")]
    for c in candidates:
        try:
            return get_backend(c)  # type: ignore[arg-type]
        except Exception:
            continue
    # fall back to scanning known moto modules for a BackendDict with that service_name
    for mod, _ in backend_url_patterns:
        try:
            bd = get_backend(mod)  # type: ignore[arg-type]
        except Exception:
            continue
        if getattr(bd, "service_name", None) == service_name:
            return bd
    return None


def new_id(prefix: str = "", n: int = 17, alphabet: str = "0123456789abcdef") -> str:
    return prefix + "".join(random.choice(alphabet) for _ in range(n))


def rand_upper(n: int) -> str:
    return "".join(random.choice(string.ascii_uppercase + string.digits) for _ in range(n))


def _make_ca_pem() -> str:
    """base64 of a PEM self-signed CA certificate, the shape of certificateAuthority.data."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()
