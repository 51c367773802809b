"""Reading the IAM statements of a template as CloudFormation resolves them."""

from __future__ import annotations


def policy_statements(template: dict, role: str, policy: str) -> list[dict]:
    """The statements of one inline policy, with Fn::If statements taken as included."""
    role_properties = template["Resources"][role]["Properties"]
    document = next(p for p in role_properties["Policies"] if p["PolicyName"] == policy)["PolicyDocument"]
    statements = []
    for statement in document["Statement"]:
        if "Fn::If" in statement:
            statement = statement["Fn::If"][1]
        statements.append(statement)
    return statements


def actions_of(statements: list[dict]) -> set[str]:
    found = set()
    for statement in statements:
        action = statement["Action"]
        found |= {action} if isinstance(action, str) else set(action)
    return found
