"""A scripted agent (issue 12 item 6): no language model — a script follows the create-cluster,
enable-features, submit-training and deploy-model skills step by step through the MCP server over
HTTP (the SDK client), answering the skills' decision questions from a fixture. It ends with a job that
succeeded and an endpoint that answers, and prints the tool calls made and the wall time.

While a tool the skills need is not registered (an app not merged yet) the test skips, naming them.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import Counter
from pathlib import Path

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent_tools import skills
from agent_tools.registry import registry
from agent_tools.waiting import TOOL_NAME as WAIT_TOOL
from instantstart.tenancy.roles import Role
from tests.support import token_for

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("sandbox")]

DECISIONS = json.loads((Path(__file__).parent / "fixtures" / "agent_decisions.json").read_text())
FOLLOWED = ("create-cluster", "enable-features", "submit-training", "deploy-model")
JOB_DONE = ("succeeded", "failed", "cancelled")


def needed_tools() -> set[str]:
    """Every tool the four skills name (the script uses a subset of them, all of which must exist)."""
    names = set()
    for skill in FOLLOWED:
        names |= set(skills.listed_tools((skills.SOURCE / skill / skills.SKILL_FILE).read_text()))
    return names


@pytest.fixture
def live_url(transactional_db):
    """instantstart.asgi.application under uvicorn on a free port, as deployed."""
    from instantstart.asgi import application

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(application, lifespan="on", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(10)
    sock.close()


class ScriptedAgent:
    """Calls tools the way the skills say, counts them, and follows every operation to its end."""

    def __init__(self, client: Client, listed: set[str]) -> None:
        self.client, self.listed, self.calls = client, listed, Counter()
        self.log: list[str] = []

    async def call(self, name: str, arguments: dict | None = None, *, ok: bool = True) -> dict:
        assert name in self.listed, f"the skills need {name}, which the server does not list"
        self.calls[name] += 1
        result = await self.client.call_tool(name, arguments or {})
        data = json.loads(result.content[0].text) if result.content else {}
        if ok:
            assert not result.is_error, (name, data)
        follow = json.loads(result.content[1].text) if len(result.content) > 1 else None
        if follow:
            data["_next"] = follow
        return data

    async def follow(self, answer: dict, what: str) -> dict:
        """wait_for_operation on what a mutating tool names until terminal; the final operation."""
        follow = answer.get("_next")
        assert follow and follow["next"] == WAIT_TOOL, (what, answer)
        ident = follow["operation_id"]
        while True:
            waited = await self.call(WAIT_TOOL, {"id": ident, "timeout_seconds": 60})
            operation = waited.get("operation") or {}
            phase = next((p["name"] for p in operation.get("phases", []) if p["status"] == "running"), "")
            self.log.append(f"{what}: {operation.get('status')} {phase}".strip())
            if waited["terminal"]:
                assert operation.get("status") == "succeeded", (what, operation.get("error"), operation)
                return operation

    async def poll(self, name: str, arguments: dict, done, what: str, timeout: float = 300) -> dict:
        """Read ``name`` until ``done(answer)`` (what a skill does for jobs and endpoints)."""
        deadline = time.monotonic() + timeout
        while True:
            answer = await self.call(name, arguments)
            if done(answer):
                return answer
            assert time.monotonic() < deadline, f"{what} did not finish: {answer}"
            await asyncio.sleep(1)


async def create_cluster(agent: ScriptedAgent, decisions: dict) -> str:
    me = await agent.call("whoami")
    assert me["role"] == Role.ADMIN
    clusters = await agent.call("list_clusters")
    assert decisions["name"] not in [c["name"] for c in clusters["results"]]
    zones = await agent.call("list_availability_zones", {"region": decisions["region"]})
    assert decisions["availability_zone"] in [z["name"] for z in zones["results"]]
    types = await agent.call(
        "list_instance_types", {"region": decisions["region"], "availability_zone": decisions["availability_zone"]}
    )
    offered = {t["instance_type"] for t in types["results"]}
    assert {g["instance_type"] for g in decisions["instance_groups"]} <= offered
    preflight = await agent.call("preflight_cluster", decisions)
    assert preflight["ok"], preflight
    created = await agent.call("create_cluster", {**decisions, "idempotency_key": "agent-create"})
    await agent.follow(created, "create_cluster")
    cluster_id = created["cluster"]["id"]
    cluster = await agent.call("get_cluster", {"id": cluster_id})
    assert cluster["status"] == "active"
    nodes = await agent.call("list_nodes", {"cluster_id": cluster_id})
    assert len(nodes["results"]) == sum(g["count"] for g in decisions["instance_groups"])
    await agent.call("set_active_cluster", {"id": cluster_id})
    return cluster_id


async def enable_features(agent: ScriptedAgent, cluster_id: str, wanted: dict) -> None:
    await agent.call("get_features", {"cluster_id": cluster_id})
    changed = await agent.call("update_features", {"cluster_id": cluster_id, **wanted, "idempotency_key": "features"})
    if changed.get("changed", True):
        await agent.follow(changed, "update_features")
    after = await agent.call("get_features", {"cluster_id": cluster_id})
    features = after.get("results", after.get("features", after))
    states = {f["name"]: f["enabled"] for f in features} if isinstance(features, list) else {}
    assert all(states.get(name) for name, on in wanted.items() if on), states


async def submit_training(agent: ScriptedAgent, cluster_id: str, job: dict) -> dict:
    await agent.call("list_files", {"cluster_id": cluster_id})
    await agent.call("list_jobs", {"cluster_id": cluster_id})
    submitted = await agent.call("submit_job", {"cluster_id": cluster_id, **job, "idempotency_key": "job"})
    await agent.follow(submitted, "submit_job")
    job_id = submitted["job"]["id"]
    final = await agent.poll(
        "get_job", {"cluster_id": cluster_id, "job_id": job_id}, lambda j: j["status"] in JOB_DONE, "the job"
    )
    await agent.call("get_job_logs", {"cluster_id": cluster_id, "job_id": job_id})
    await agent.call("get_job_metrics", {"cluster_id": cluster_id, "job_id": job_id})
    return final


async def deploy_model(agent: ScriptedAgent, cluster_id: str, endpoint: dict, prompt: str) -> dict:
    await agent.call("list_endpoints", {"cluster_id": cluster_id})
    deployed = await agent.call("deploy_endpoint", {"cluster_id": cluster_id, **endpoint, "idempotency_key": "ep"})
    await agent.follow(deployed, "deploy_endpoint")
    target = {"cluster_id": cluster_id, "name": deployed["endpoint"]["name"]}
    ready = await agent.poll("get_endpoint", target, lambda e: e.get("status") in ("ready", "failed"), "the endpoint")
    assert ready["status"] == "ready", ready
    return await agent.call("invoke_endpoint", {**target, "messages": [{"role": "user", "content": prompt}]})


def test_a_scripted_agent_trains_and_serves(live_url, start_worker, team, admin_user):
    registered = {tool.name for tool in registry} | {WAIT_TOOL}
    missing = sorted(needed_tools() - registered)
    if missing:
        pytest.skip(f"tools the skills name are not registered yet: {', '.join(missing)}")
    start_worker()
    token = token_for(team, admin_user, Role.ADMIN)

    async def run():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=90) as http:
            async with Client(streamable_http_client(f"{live_url}/mcp/", http_client=http)) as client:
                listed = {tool.name for tool in (await client.list_tools()).tools}
                agent = ScriptedAgent(client, listed)
                started = time.monotonic()
                cluster_id = await create_cluster(agent, DECISIONS["cluster"])
                await enable_features(agent, cluster_id, DECISIONS["features"])
                job = await submit_training(agent, cluster_id, DECISIONS["job"])
                answer = await deploy_model(agent, cluster_id, DECISIONS["endpoint"], DECISIONS["prompt"])
                return agent, job, answer, time.monotonic() - started

    agent, job, answer, wall = asyncio.run(run())
    print(f"\nscripted agent: {sum(agent.calls.values())} tool calls in {wall:.1f}s: {dict(agent.calls)}")
    print("\n".join(agent.log[-10:]))
    assert job["status"] == "succeeded", job
    assert answer["choices"][0]["message"]["content"], answer
