"""Agent config (issue 12 item 4): Kiro and Claude Code reach the MCP server; read-only tools are
pre-allowed in Kiro and no mutating one is."""

from __future__ import annotations

import fnmatch
import json

from agent_tools import skills
from agent_tools.registry import registry
from agent_tools.waiting import TOOL_NAME as WAIT_TOOL

ROOT = skills.ROOT


def kiro() -> dict:
    return json.loads((ROOT / ".kiro/agents/hypd-inst-agent.json").read_text())


def test_kiro_agent_runs_the_server_over_stdio_or_http():
    config = kiro()
    assert config["name"] == "hypd-inst-agent"
    stdio = config["mcpServers"]["instantstart"]
    assert stdio["args"] == ["manage.py", "mcp"] and "INSTANTSTART_TOKEN" in stdio["env"]
    http = config["mcpServers"]["instantstart-http"]
    assert http["url"].endswith("/mcp/") and http["headers"]["Authorization"] == "Bearer ${INSTANTSTART_TOKEN}"
    assert config["resources"] == ["skill://.kiro/skills/**/SKILL.md"]


def test_kiro_pre_allows_exactly_the_read_only_tools():
    patterns = [entry.split("/", 1)[1] for entry in kiro()["allowedTools"] if entry.startswith("@instantstart/")]

    def allowed(name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)

    for tool in registry:
        assert allowed(tool.name) == tool.read_only, tool.name
    assert allowed(WAIT_TOOL)


def test_claude_code_config():
    servers = json.loads((ROOT / ".mcp.json").read_text())["mcpServers"]
    assert servers["instantstart"]["args"] == ["manage.py", "mcp"]
    agent = (ROOT / ".claude/agents/hypd-inst-agent.md").read_text()
    fields = skills.frontmatter(agent)
    assert fields["name"] == "hypd-inst-agent" and "mcp__instantstart" in fields["tools"]
    for name in skills.skill_names():
        assert f"  - {name}\n" in agent, name
