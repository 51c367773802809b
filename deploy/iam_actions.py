"""Every AWS action InstantStart performs, found in its code, and the policies generated from them.

    .venv/bin/python -m deploy.iam            # the actions per role, and where each is called
    .venv/bin/python -m deploy.iam --write    # regenerate the policies in the templates
    .venv/bin/python -m deploy.iam --check    # exit 1 when a template lacks or exceeds the code

The walk reads the product's Python (not the sandbox, not the tests) with `ast`: a name bound to
``<x>.client("<service>")`` is a boto3 client; every method called on it (directly, through
``get_paginator``/``get_waiter``, or ``getattr`` with a constant or a module-level table of names)
is an API operation, checked against botocore's service model. A client passed to a function of
the product binds that function's parameter too, and a function that returns a client makes its
callers' names clients. Calls through a client made from ``boto3`` itself run as the control
plane's own identity (the management instance's role); all others go through a team's assumed role
(``instantstart.cloud.aws.team_cloud``) and belong in ``deploy/instantstart-role.yaml``.

Operations become IAM actions in ``deploy/iam_policy.py`` (names that differ, actions a call
implies, and the resource scopes). Anything the walk cannot resolve is reported as a problem: the
check fails, naming the file and line, rather than leaving an action out silently.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT_PACKAGES = ("instantstart", "clusters", "features", "training", "inference", "agent_tools")
SKIPPED_PARTS = {"migrations", "__pycache__"}

TEAM = "team"  # through the team's assumed role: deploy/instantstart-role.yaml
CONTROL_PLANE = "control-plane"  # the instance's own role: deploy/cloudformation/management.yaml

# Methods of a boto3 client that are not API operations.
NOT_OPERATIONS = {"exceptions", "meta", "can_paginate", "close", "get_paginator", "get_waiter", "waiter_names"}
# The one place that makes clients from a service name held in a variable: every caller of it
# names its service with a literal one call up, where the walk sees it.
CLIENT_FACTORIES = {("instantstart/cloud/aws.py", "_client")}

REGENERATE = ".venv/bin/python -m deploy.iam --write"


@dataclass(frozen=True, order=True)
class Call:
    """One API operation called somewhere in the product, as whom."""

    identity: str
    service: str
    operation: str
    where: str = field(compare=False)
    # Keyword arguments of the call: TagSpecifications / Tags / tags mean tag-on-create.
    keywords: frozenset[str] = field(default=frozenset(), compare=False)


@dataclass
class Walk:
    calls: list[Call] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@cache
def service_operations(service: str) -> dict[str, str]:
    """boto3 method name → API operation name, from botocore's model (raises for an unknown service)."""
    from botocore import xform_name

    model = _botocore().get_service_model(service)
    return {xform_name(name): name for name in model.operation_names}


@lru_cache(maxsize=1)
def _botocore():
    import botocore.session

    return botocore.session.get_session()


def waiter_operation(service: str, waiter: str) -> str | None:
    from botocore import xform_name

    try:
        model = _botocore().get_waiter_model(service)
    except Exception:  # noqa: BLE001 - a service without waiters
        return None
    names = {xform_name(name): name for name in model.waiter_names}
    return model.get_waiter(names[waiter]).operation if waiter in names else None


# --- the module index -----------------------------------------------------------------------


@dataclass
class Module:
    path: str  # relative to ROOT
    name: str  # dotted
    tree: ast.Module
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)  # top-level and methods
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # local name → (module, name)
    constants: dict[str, ast.expr] = field(default_factory=dict)  # module-level NAME = literal


def product_files(root: Path = ROOT) -> Iterator[Path]:
    for package in PRODUCT_PACKAGES:
        base = root / package
        if not base.is_dir():
            continue  # an app still being built
        for path in sorted(base.rglob("*.py")):
            if not SKIPPED_PARTS & set(path.relative_to(root).parts):
                yield path


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def index(root: Path = ROOT) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for path in product_files(root):
        name = _module_name(path, root)
        module = Module(str(path.relative_to(root)), name, ast.parse(path.read_text(), filename=str(path)))
        for node in module.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                module.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        module.functions[f"{node.name}.{item.name}"] = item
            elif isinstance(node, ast.ImportFrom):
                source = (
                    _resolve_relative(name, path.name == "__init__.py", node.level, node.module)
                    if node.level
                    else node.module or ""
                )
                for alias in node.names:
                    module.imports[alias.asname or alias.name] = (source, alias.name)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                module.constants[node.targets[0].id] = node.value
        # Statements outside functions (a client made at import time) are walked as one more body.
        top = [n for n in module.tree.body if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
        module.functions[MODULE_BODY] = ast.Module(body=top, type_ignores=[])  # type: ignore[assignment]
        modules[name] = module
    return modules


# --- the walk -------------------------------------------------------------------------------

FunctionKey = tuple[str, str]  # (module name, function name)
MODULE_BODY = "<module>"


class _Analysis:
    """Fixpoint over the product: parameter and return bindings grow until nothing changes."""

    def __init__(self, modules: dict[str, Module]) -> None:
        self.modules = modules
        self.params: dict[FunctionKey, dict[str, set]] = defaultdict(lambda: defaultdict(set))
        self.returns: dict[FunctionKey, set] = defaultdict(set)
        # self.<name> bound to a client in one method is that client in every method of the class.
        self.attributes: dict[FunctionKey, dict[str, set]] = defaultdict(lambda: defaultdict(set))

    def run(self) -> Walk:
        while True:
            before = self._state()
            walk = Walk()
            for module in self.modules.values():
                for function_name, node in module.functions.items():
                    _FunctionWalk(self, module, function_name, node, walk).run()
            if self._state() == before:
                walk.calls.sort()
                return walk

    def _state(self):
        return (
            {k: {p: frozenset(v) for p, v in params.items()} for k, params in self.params.items()},
            {k: frozenset(v) for k, v in self.returns.items()},
            {k: {a: frozenset(v) for a, v in attrs.items()} for k, attrs in self.attributes.items()},
        )

    def resolve_function(self, module: Module, func: ast.expr) -> FunctionKey | None:
        if isinstance(func, ast.Name):
            if func.id in module.functions:
                return (module.name, func.id)
            if func.id in module.imports:
                source, name = module.imports[func.id]
                target = self.modules.get(source)
                if target and name in target.functions:
                    return (source, name)
        return None


class _FunctionWalk:
    def __init__(self, analysis: _Analysis, module: Module, name: str, node: ast.FunctionDef, walk: Walk) -> None:
        self.analysis, self.module, self.name, self.node, self.walk = analysis, module, name, node, walk
        self.key: FunctionKey = (module.name, name)
        self.clients: dict[str, set] = {p: set(b) for p, b in analysis.params[self.key].items()}
        self.sessions: set[str] = set()  # names bound to a boto3 Session of our own identity
        self.class_key: FunctionKey | None = (module.name, name.split(".")[0]) if "." in name else None
        if self.class_key:
            for attribute, found in analysis.attributes[self.class_key].items():
                self.clients.setdefault(attribute, set()).update(found)

    def where(self, node: ast.AST) -> str:
        return f"{self.module.path}:{node.lineno}"

    def run(self) -> None:
        # Bindings first (names may be bound after a lambda that uses them is written).
        for _ in range(2):
            for node in ast.walk(self.node):
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        self._bind(target, node.value)
                elif isinstance(node, ast.Return) and node.value is not None:
                    found = self.client_of(node.value)
                    if found:
                        self.analysis.returns[self.key] |= found
        for node in ast.walk(self.node):
            if isinstance(node, ast.Call):
                self._call(node)

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        name = _target_name(target)
        if name is None:
            return
        if _is_own_session(value):
            self.sessions.add(name)
        found = self.client_of(value)
        if found:
            self.clients.setdefault(name, set()).update(found)
            if self.class_key and name.startswith("self."):
                self.analysis.attributes[self.class_key][name] |= found

    def client_of(self, expr: ast.expr) -> set:
        """The (identity, service) pairs an expression may be a client of."""
        if isinstance(expr, ast.Name | ast.Attribute):
            name = _target_name(expr)
            if name in self.clients:
                return self.clients[name]
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr == "client":
                service = _literal(expr.args[0] if expr.args else _keyword(expr, "service_name"))
                if service is None:
                    if (self.module.path, self.name) not in CLIENT_FACTORIES:
                        self.walk.problems.append(
                            f"{self.where(expr)}: .client() with a service name the walk cannot read; "
                            "use a literal service name"
                        )
                    return set()
                identity = CONTROL_PLANE if self._own_identity(func.value) else TEAM
                return {(identity, service)}
            target = self.analysis.resolve_function(self.module, func)
            if target and self.analysis.returns.get(target):
                return set(self.analysis.returns[target])
        return set()

    def _own_identity(self, receiver: ast.expr) -> bool:
        if isinstance(receiver, ast.Name) and (receiver.id == "boto3" or receiver.id in self.sessions):
            return True
        return _is_own_session(receiver)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        # getattr(client, NAME)(...)
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr":
            clients = self.client_of(func.args[0]) if func.args else set()
            if clients:
                names = self._names_of(func.args[1]) if len(func.args) > 1 else None
                if names is None:
                    self.walk.problems.append(
                        f"{self.where(node)}: getattr() on a boto3 client with a name the walk cannot read; "
                        "use a literal or a module-level table of method names"
                    )
                for method in names or ():
                    self._record(clients, method, node)
            return
        if isinstance(func, ast.Attribute):
            clients = self.client_of(func.value)
            if clients:
                method = func.attr
                if method in ("get_paginator", "generate_presigned_url"):
                    inner = _literal(node.args[0] if node.args else _keyword(node, "ClientMethod"))
                    if inner is None:
                        self.walk.problems.append(f"{self.where(node)}: {method}() with a name the walk cannot read")
                    else:
                        self._record(clients, inner, node)
                elif method == "get_waiter":
                    waiter = _literal(node.args[0] if node.args else None)
                    for identity, service in clients:
                        operation = waiter_operation(service, waiter or "")
                        if operation is None:
                            self.walk.problems.append(f"{self.where(node)}: unknown {service} waiter {waiter!r}")
                        else:
                            self.walk.calls.append(Call(identity, service, operation, self.where(node)))
                elif method not in NOT_OPERATIONS:
                    self._record(clients, method, node)
        # A client handed to one of the product's functions binds that function's parameter.
        target = self.analysis.resolve_function(self.module, func)
        if target is None:
            return
        params = _parameters(self.analysis.modules[target[0]].functions[target[1]])
        for position, argument in enumerate(node.args):
            found = self.client_of(argument)
            if found and position < len(params):
                self.analysis.params[target][params[position]] |= found
        for keyword in node.keywords:
            found = self.client_of(keyword.value) if keyword.arg else set()
            if found:
                self.analysis.params[target][keyword.arg] |= found

    def _record(self, clients: set, method: str, node: ast.AST) -> None:
        matched = False
        for identity, service in sorted(clients):
            try:
                operations = service_operations(service)
            except Exception:  # noqa: BLE001 - botocore's UnknownServiceError
                self.walk.problems.append(f"{self.where(node)}: {service!r} is not a boto3 service")
                continue
            if method in operations:
                matched = True
                keywords = frozenset(k.arg for k in getattr(node, "keywords", ()) if k.arg)
                self.walk.calls.append(Call(identity, service, operations[method], self.where(node), keywords))
        if not matched and clients:
            services = ", ".join(sorted({s for _, s in clients}))
            self.walk.problems.append(f"{self.where(node)}: {method}() is not an operation of {services}")

    def _names_of(self, expr: ast.expr) -> list[str] | None:
        """Method names an expression can take: a literal, or any value of a module-level table."""
        literal = _literal(expr)
        if literal is not None:
            return [literal]
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
            table = self.module.constants.get(expr.value.id)
            values = table.values if isinstance(table, ast.Dict) else getattr(table, "elts", None)
            if values is not None:
                names = [_literal(v) for v in values]
                if all(n is not None for n in names):
                    return names  # type: ignore[return-value]
        return None


def _target_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == name), None)


def _parameters(node: ast.FunctionDef) -> list[str]:
    args = [a.arg for a in node.args.posonlyargs + node.args.args]
    return args[1:] if args and args[0] in ("self", "cls") else args


def _is_own_session(node: ast.expr) -> bool:
    """boto3.session.Session(...) or boto3.Session(...): credentials of the process itself."""
    if not isinstance(node, ast.Call):
        return False
    dotted = ast.unparse(node.func)
    return dotted in ("boto3.session.Session", "boto3.Session")


def discover(root: Path = ROOT) -> Walk:
    """Every API call the product makes, and what the walk could not resolve."""
    return _Analysis(index(root)).run()
