"""What Ray itself prints in a KubeRay cluster: `ray start --head --block` on the head pod, `ray start
--address=… --block` on workers, and KubeRay's K8sJobMode submitter (`ray job status || ray job submit
--no-wait`, then `ray job logs --follow`), whose output ends with the tail of the driver's log."""

from __future__ import annotations

from .program import asctime


def head_lines(ip: str) -> list[str]:
    return [
        "Usage stats collection is disabled.",
        "",
        f"Local node IP: {ip}",
        "",
        "--------------------",
        "Ray runtime started.",
        "--------------------",
        "",
        "Next steps",
        "  To add another node to this Ray cluster, run",
        f"    ray start --address='{ip}:6379'",
        "",
        "  To connect to this Ray cluster:",
        "    import ray",
        "    ray.init()",
        "",
        "  To submit a Ray job using the Ray Jobs CLI:",
        f"    RAY_ADDRESS='http://{ip}:8265' ray job submit --working-dir . -- python my_script.py",
        "",
        "  To terminate the Ray runtime, run",
        "    ray stop",
        "",
        "  To view the status of the cluster, use",
        "    ray status",
        "",
        "  To monitor and debug Ray, view the dashboard at ",
        f"    {ip}:8265",
        "",
        "  If connection to the dashboard fails, check your firewall settings and network configuration.",
        *_block(),
    ]


def worker_lines(ip: str, head: str) -> list[str]:
    return [
        f"Local node IP: {ip}",
        "",
        "--------------------",
        "Ray runtime started.",
        "--------------------",
        "",
        "To terminate the Ray runtime, run",
        "  ray stop",
        *_block(),
    ]


def _block() -> list[str]:
    return [
        "--block",
        "  This command will now block forever until terminated by a signal.",
        "  Running subprocesses are monitored and a message will be printed if any of them terminate "
        "unexpectedly. Subprocesses exit with SIGTERM will be treated as graceful, thus NOT reported.",
    ]


def submit_lines(t: float, address: str, job_id: str) -> list[str]:
    """The submitter pod's own lines before the driver's log follows."""
    ts = asctime(t)
    return [
        f"{ts}\tINFO cli.py:41 -- Job submission server address: {address}",
        f"{ts}\tSUCC cli.py:65 -- {'-' * 49}",
        f"{ts}\tSUCC cli.py:66 -- Job '{job_id}' submitted successfully",
        f"{ts}\tSUCC cli.py:67 -- {'-' * 49}",
        f"{ts}\tINFO cli.py:291 -- Next steps",
        f"{ts}\tINFO cli.py:292 -- Query the logs of the job:",
        f"{ts}\tINFO cli.py:294 -- ray job logs {job_id}",
        f"{ts}\tINFO cli.py:296 -- Query the status of the job:",
        f"{ts}\tINFO cli.py:298 -- ray job status {job_id}",
        f"{ts}\tINFO cli.py:300 -- Request the job to be stopped:",
        f"{ts}\tINFO cli.py:302 -- ray job stop {job_id}",
        f"{ts}\tINFO cli.py:41 -- Job submission server address: {address}",
    ]


def driver_generic_lines(t: float, head_ip: str, entrypoint: str) -> list[str]:
    """A driver whose program the sandbox does not know: Ray's connection lines only."""
    return [
        f"{asctime(t)}\tINFO worker.py:1694 -- Connecting to existing Ray cluster at address: {head_ip}:6379...",
        f"{asctime(t)}\tINFO worker.py:1879 -- Connected to Ray cluster. View the dashboard at {head_ip}:8265 ",
    ]
