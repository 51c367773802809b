"""The few IAM questions AWS services ask before they use a role the caller names: does it exist, does
its trust policy let the service assume it, do its policies allow what the service will do. Read from
moto's IAM backend (inline and attached policies, default versions); Allow statements only, with
`*` wildcards; conditions and Deny are not evaluated.
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import Any


def find_role(account: str, role_arn: str) -> Any | None:
    from moto.iam.models import iam_backends

    name = role_arn.rsplit("/", 1)[-1]
    backend = iam_backends[account]["aws"]
    return next((r for r in backend.roles.values() if r.name == name and r.arn == role_arn), None)


def _statements(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError:
            return []
    st = (doc or {}).get("Statement") or []
    return [s for s in (st if isinstance(st, list) else [st]) if isinstance(s, dict) and s.get("Effect") == "Allow"]


def _as_list(v: Any) -> list[str]:
    return [v] if isinstance(v, str) else list(v or [])


def trusts(role: Any, service: str, action: str = "sts:AssumeRole") -> bool:
    """The role's trust policy allows `service` (a service principal) to `action`."""
    for s in _statements(role.assume_role_policy_document):
        principal = s.get("Principal") or {}
        services = _as_list(principal.get("Service")) if isinstance(principal, dict) else _as_list(principal)
        if (service in services or "*" in services) and any(fnmatchcase(action, a) for a in _as_list(s.get("Action"))):
            return True
    return False


def missing_actions(account: str, role: Any, actions: list[str]) -> list[str]:
    """The actions none of the role's policies allows."""
    from moto.iam.models import iam_backends

    docs: list[Any] = list((role.policies or {}).values())
    backend = iam_backends[account]["aws"]
    for arn in role.managed_policies or {}:
        policy = backend.managed_policies.get(arn) or role.managed_policies[arn]
        docs += [v.document for v in getattr(policy, "versions", []) if getattr(v, "is_default", False)]
    allowed = [a for doc in docs for s in _statements(doc) for a in _as_list(s.get("Action"))]
    return [x for x in actions if not any(fnmatchcase(x.lower(), a.lower()) for a in allowed)]
