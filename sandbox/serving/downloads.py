"""Model and dataset downloads: a pod (usually a batch/v1 Job's) that runs `hf download <id>
[--repo-type dataset] --local-dir <dir>` (or `huggingface-cli download`), optionally followed by
`cp -r`/`mv`/`rsync` of that directory.

It prints what `pip install` and `hf download` print (tqdm progress per file, then the local
path), takes time in proportion to the repo's size (~250 MB/s simulated), and on success the
files exist where the command put them: under the bucket prefix when the directory is on a
Mountpoint-for-S3 volume (`/s3/...`), recorded for the file system when it is on FSx
(`/fsx/...`). Bodies are small placeholders (config.json is real JSON); each object carries the
real size in user metadata `x-amz-meta-sandbox-original-size`. A gated repo without `HF_TOKEN` (or
`HUGGING_FACE_HUB_TOKEN`) fails with the hub's 401 message and exit code 1.
"""

from __future__ import annotations

import concurrent.futures
import shlex
from typing import Any

from ..kube.controllers.base import Ctx, sim
from ..kube.controllers.kubelet import terminate
from ..kube.store import Cluster
from . import catalog, commands
from .objects import ObjectStore
from .startup import gated_error
from .volumes import Location, record_fsx, resolve

Obj = dict[str, Any]
BYTES_PER_SECOND = 250 * 1024 * 1024  # simulated download + copy throughput
MIN_SECONDS = 8.0


def _human(n: float) -> str:
    for unit in ("", "k", "M", "G", "T"):
        if n < 1000:
            return f"{n:.2f}{unit}" if unit else f"{int(n)}"
        n /= 1000
    return f"{n:.1f}P"


def _bar(frac: float) -> str:
    full = int(frac * 10)
    return (
        "█" * full
        + ("▌" if frac * 10 - full >= 0.5 and full < 10 else " ") * (1 if full < 10 else 0)
        + " " * max(0, 9 - full)
    )


def _destination(c: Cluster, pod: Obj, ct: Obj, local_dir: str) -> tuple[Location, str]:
    """Where the files end up: the --local-dir itself, or where a later cp/mv/rsync puts it."""
    argv = [str(x) for x in (ct.get("command") or []) + (ct.get("args") or [])]
    script = argv[argv.index("-c") + 1] if "-c" in argv and argv.index("-c") + 1 < len(argv) else ""
    dest_path = local_dir
    try:
        tokens = shlex.split(script.replace("\\\n", " "))
    except ValueError:
        tokens = script.split()
    for i, t in enumerate(tokens):
        if t in ("cp", "mv", "rsync"):
            args = [a for a in tokens[i + 1 :] if not a.startswith("-")]
            stop = next((j for j, a in enumerate(args) if a in ("&&", ";", "||", "|")), len(args))
            args = args[:stop]
            if len(args) >= 2 and args[0].rstrip("/.").rstrip("/") == local_dir.rstrip("/"):
                dest_path = args[1].rstrip("/")
    return resolve(c, pod, ct, dest_path), dest_path


def _token(c: Cluster, pod: Obj, ct: Obj, prog: commands.Program) -> bool:
    if prog.opt("--token"):
        return True
    for e in ct.get("env") or []:
        if e.get("name") not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
            continue
        if e.get("value"):
            return True
        ref = (e.get("valueFrom") or {}).get("secretKeyRef") or {}
        sec = c.get("/secrets", pod["metadata"]["namespace"], str(ref.get("name", "")))
        if sec and (ref.get("key") in (sec.get("data") or {}) or ref.get("key") in (sec.get("stringData") or {})):
            return True
    return False


def reconcile(
    c: Cluster,
    ctx: Ctx,
    pod: Obj,
    ct: Obj,
    prog: commands.Program,
    speedup: float,
    writes: dict[str, concurrent.futures.Future[Any]],
    pool: concurrent.futures.Executor,
    objects: ObjectStore,
) -> None:
    """One download pod (cluster lock held); writes to the object store run on `pool`."""
    s = sim(c, pod)
    d = s.setdefault("download", {})
    name = ct["name"]
    uid = pod["metadata"]["uid"]
    if not d:
        repo_id = prog.positionals[0] if prog.positionals else ""
        kind = prog.opt("--repo-type", default="model") or "model"
        d.update(repo=repo_id, kind=kind, t0=ctx.now, printed=0, phase="fetch")
        for line in (
            "Collecting huggingface_hub[cli]",
            "  Downloading huggingface_hub-0.35.3-py3-none-any.whl.metadata (14 kB)",
            "Successfully installed filelock-3.19.1 fsspec-2025.9.0 hf-xet-1.1.10 huggingface_hub-0.35.3 "
            "packaging-25.0 pyyaml-6.0.3 tqdm-4.67.1 typing_extensions-4.15.0",
            "WARNING: Running pip as the 'root' user can result in broken permissions and conflicting behaviour "
            "with the system package manager, possibly rendering your system unusable. It is recommended to use a "
            "virtual environment instead: https://pip.pypa.io/warnings/venv.",
        ):
            c.append_log(pod, name, line)
        if not catalog.valid_id(repo_id):
            c.append_log(
                pod,
                name,
                f"huggingface_hub.errors.HFValidationError: Repo id must be in the form "
                f"'repo_name' or 'namespace/repo_name': '{repo_id}'. Use `repo_type` argument "
                "if needed.",
            )
            terminate(c, pod, 1, "Error")
            return
        repo = catalog.lookup(repo_id, kind)
        if repo.gated and not _token(c, pod, ct, prog):
            for line in gated_error(repo.id, repo.files[0][0]).split("\n"):
                c.append_log(pod, name, line)
            terminate(c, pod, 1, "Error")
            return
        return
    repo = catalog.lookup(d["repo"], d["kind"])
    files = list(repo.files)
    total = repo.size_bytes
    duration = max(MIN_SECONDS, total / BYTES_PER_SECOND)
    elapsed = ctx.elapsed(d["t0"])
    if d["phase"] == "fetch":
        # progress lines: one per finished file, paced by size, like tqdm's per-file bars
        done_bytes = min(total, elapsed / duration * total)
        acc, finished = 0, 0
        for _fname, size in files:
            acc += size
            if acc <= done_bytes:
                finished += 1
        for i in range(d["printed"], finished):
            fname, size = files[i]
            secs = max(1, int(size / BYTES_PER_SECOND))
            rate = size / max(secs, 1)
            c.append_log(
                pod,
                name,
                f"{fname}: 100%|██████████| {_human(size)}B/{_human(size)}B [00:{secs:02d}<00:00, {_human(rate)}B/s]",
            )
            c.append_log(
                pod,
                name,
                f"Fetching {len(files)} files: {int((i + 1) / len(files) * 100):3d}%|"
                f"{_bar((i + 1) / len(files))}| {i + 1}/{len(files)} "
                f"[00:{int(elapsed) % 60:02d}<00:00, {(i + 1) / max(elapsed, 1):.2f}it/s]",
            )
        d["printed"] = finished
        if finished < len(files):
            return
        local_dir = (
            prog.opt("--local-dir") or f"/root/.cache/huggingface/hub/{d['kind']}s--{d['repo'].replace('/', '--')}"
        )
        loc, dest = _destination(c, pod, ct, local_dir)
        d.update(phase="write", dest=dest, local_dir=local_dir, store=loc.kind, bucket=loc.store, prefix=loc.path)
        if loc.kind == "fsx":
            record_fsx(c, loc.store, {f"{loc.path}/{f}".strip("/"): size for f, size in files})
    if d["phase"] == "write":
        fut = writes.get(uid)
        if fut is None and d.get("store") == "s3":
            # submitted once; again after a sandbox restart (the objects are simply rewritten)
            writes[uid] = pool.submit(_write_s3, objects, c.account, d["bucket"], d["prefix"].strip("/"), repo)
            return
        if fut is not None and not fut.done():
            return
        ok = True
        if fut is not None:
            writes.pop(uid, None)
            try:
                ok = bool(fut.result())
            except Exception:  # noqa: BLE001 - a failed write is the pod's I/O error
                ok = False
        if not ok:
            c.append_log(pod, name, f"cp: cannot create regular file '{d['dest']}/config.json': Input/output error")
            terminate(c, pod, 1, "Error")
            return
        c.append_log(pod, name, d["local_dir"])
        if d["dest"] != d["local_dir"]:
            c.append_log(pod, name, f"copied {d['local_dir']} to {d['dest']} ({_human(total)}B)")
        d["phase"] = "done"
        terminate(c, pod, 0, "Completed")


def _write_s3(objects: ObjectStore, account: str, bucket: str, prefix: str, repo: catalog.Repo) -> bool:
    for fname, size in repo.files:
        key = f"{prefix}/{fname}" if prefix else fname
        if not objects.put(account, bucket, key, catalog.body_of(repo, fname), size):
            return False
    return True
