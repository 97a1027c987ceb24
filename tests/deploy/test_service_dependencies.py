"""Every service image installs what the service imports.

An image holds one service and the three libraries, installed from their pyproject files, not
the development virtualenv where every package sees every other's dependencies. A module-level
import a service does not declare (directly, or through what it declares) works in `make test`
and fails in its container at start: the rehearsal found the verifier importing uvicorn that
only the gateway declared.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("gateway", "retrieval", "verifier", "discovery", "staging")
LOCAL = {
    "zocrates-contracts": "libs/contracts",
    "zocrates-runtime": "libs/runtime",
    "zocrates-citations": "libs/citations",
} | {f"zocrates-{s}": f"services/{s}" for s in SERVICES}


def declared(project: str) -> list[Requirement]:
    data = tomllib.loads((ROOT / LOCAL[project] / "pyproject.toml").read_text())
    return [Requirement(r) for r in data["project"].get("dependencies", [])]


def closure(project: str) -> set[str]:
    """Distributions a plain `pip install <project>` brings, read from the installed metadata."""
    seen: set[str] = set()
    todo = [Requirement(project)]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += declared(name) if name in LOCAL else [Requirement(r) for r in metadata.requires(name) or []]
    return seen


def module_level_imports(package: Path) -> set[str]:
    """Top-level names imported at module level (not inside functions or try blocks)."""
    names: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("service", SERVICES)
def test_every_module_level_import_is_installed_with_the_service(service):
    installs = closure(f"zocrates-{service}")
    providers = metadata.packages_distributions()
    missing = {}
    for name in module_level_imports(ROOT / "services" / service / "src" / f"zocrates_{service}"):
        if name in sys.stdlib_module_names or name.startswith("zocrates_") or name == "__future__":
            continue
        dists = {canonicalize_name(d) for d in providers.get(name, [])}
        if not dists & installs:
            missing[name] = sorted(dists) or ["(not installed here)"]
    assert not missing, f"zocrates-{service} imports what its pyproject does not bring: {missing}"
