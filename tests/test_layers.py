"""Dependencies point one way: a gateway module imports only from its own package or from a
lower layer (docs/architecture.md), and no modules import each other in a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "gateway"
# top to bottom; the packages (or top-level modules) of one layer do not import each other
LAYERS: list[set[str]] = [
    {"__main__"},
    {"cli"},
    {"http_server", "runner", "preflight"},
    {"app", "uvicorn_protocol", "worker_process"},
    {"resources", "wiring"},
    {"console", "platform"},
    {"evaluator"},
    {"deliveries"},
    {"automations", "webhooks", "connections", "ingress"},
    {"api"},
    {"accounts", "services"},
    {"backends", "blobs", "replies"},
    {"store", "signatures", "providers", "openapi"},
    {"problem", "security", "settings", "logs", "metrics", "trusted_proxies"},
    {"errors", "ids", "types", "catalog", "attachment_storage", "rejections", "allocator"}
    | {"response_writes"},
]
# The two products: the webhook gateway reaches the agent platform only through the one module
# that starts runs (docs/architecture.md, "Two products")
GATEWAY = {
    "ingress", "backends", "signatures", "providers", "evaluator",
    "webhooks", "connections", "automations", "deliveries", "console",
}  # fmt: skip
NARROW_INTERFACE = "gateway.platform.run_start"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str) -> set[str]:
    targets: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gateway"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                targets.add(full if full in MODULES else node.module)
        elif isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names if alias.name in MODULES}
    return targets


def _layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else "__init__"
    for level, names in enumerate(LAYERS):
        if part in names:
            return level
    raise AssertionError(f"{module}: in no layer of tests/test_layers.py")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "gateway"))
def test_imports_point_down(module: str) -> None:
    own = module.split(".")[1]
    for target in _imports(module):
        if target == "gateway" or target.split(".")[1] == own or target == NARROW_INTERFACE:
            continue
        assert _layer(target) > _layer(module), f"{module} imports {target}: not a lower layer"


def test_no_import_cycles() -> None:
    graph = {name: _imports(name) & MODULES.keys() for name in MODULES}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            raise AssertionError(" -> ".join([*path[path.index(name) :], name]))
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if m.count(".") and m.split(".")[1] in GATEWAY)
)
def test_the_gateway_reaches_the_platform_only_to_start_runs(module: str) -> None:
    platform = {t for t in _imports(module) if t.startswith("gateway.platform")}
    assert platform <= {NARROW_INTERFACE}, f"{module} imports {sorted(platform)}"
