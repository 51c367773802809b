"""The agent skills: written once under .kiro/skills/, generated into .claude/skills/.

``python -m agent_tools.skills`` (``make skills``) copies every ``.kiro/skills/<name>/SKILL.md`` to
``.claude/skills/<name>/SKILL.md`` and removes generated skills whose source is gone; ``--check``
only reports differences (the test runs that). Each skill lists the tools it uses under a
``## Tools`` heading; ``named_tools`` reads that list and every tool-like name in the text.
No Django here: it runs before the project is set up.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / ".kiro" / "skills"
GENERATED = ROOT / ".claude" / "skills"
SKILL_FILE = "SKILL.md"

_FRONTMATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_BACKTICKED = re.compile(r"`([a-z][a-z0-9_]*)`")
_TOOLS_SECTION = re.compile(r"^## Tools\n(.*?)(?=^## |\Z)", re.S | re.M)
# A backticked name that reads like a tool call (verb first) must be a tool the skill lists.
TOOL_VERBS = (
    "list", "get", "create", "delete", "add", "scale", "update", "submit", "cancel", "deploy", "invoke", "assign",
    "download", "retry", "reboot", "replace", "diagnose", "attach", "detach", "import", "reconcile", "set",
    "change", "preflight", "wait", "revoke", "remove", "resubmit", "whoami",
)  # fmt: skip


def skill_names() -> list[str]:
    return sorted(path.parent.name for path in SOURCE.glob(f"*/{SKILL_FILE}"))


def frontmatter(text: str) -> dict[str, str]:
    """The ``key: value`` lines of the skill's YAML frontmatter (name, description)."""
    match = _FRONTMATTER.match(text)
    if not match:
        return {}
    fields = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def listed_tools(text: str) -> list[str]:
    """The tools under the skill's ``## Tools`` heading."""
    match = _TOOLS_SECTION.search(text)
    return _BACKTICKED.findall(match.group(1)) if match else []


def tool_like_names(text: str) -> set[str]:
    """Backticked names in the skill's text that read like a tool (verb first, snake_case)."""
    return {name for name in _BACKTICKED.findall(text) if name.split("_")[0] in TOOL_VERBS}


def differences() -> list[str]:
    """How .claude/skills/ differs from what .kiro/skills/ generates (empty: in sync)."""
    problems = []
    for name in skill_names():
        source = (SOURCE / name / SKILL_FILE).read_text()
        target = GENERATED / name / SKILL_FILE
        if not target.exists():
            problems.append(f"{target.relative_to(ROOT)} is missing")
        elif target.read_text() != source:
            problems.append(f"{target.relative_to(ROOT)} differs from its source")
    for path in GENERATED.glob(f"*/{SKILL_FILE}") if GENERATED.exists() else []:
        if path.parent.name not in skill_names():
            problems.append(f"{path.relative_to(ROOT)} has no source in .kiro/skills/")
    return problems


def generate() -> list[str]:
    """Write .claude/skills/ from .kiro/skills/; the files written or removed."""
    changed = []
    names = skill_names()
    for name in names:
        source = SOURCE / name / SKILL_FILE
        target = GENERATED / name / SKILL_FILE
        if not target.exists() or target.read_text() != source.read_text():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            changed.append(str(target.relative_to(ROOT)))
    if GENERATED.exists():
        for path in GENERATED.iterdir():
            if path.is_dir() and path.name not in names:
                shutil.rmtree(path)
                changed.append(f"removed {path.relative_to(ROOT)}")
    return changed


def main(argv: list[str]) -> int:
    if "--check" in argv:
        problems = differences()
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    for line in generate():
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
