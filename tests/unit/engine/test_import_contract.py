"""apps.engine is a plain library: importing Django, Channels or another app from it fails the
build. lint-imports (run by `make test`) enforces the contract statically; this test enforces it
again by scanning every module's imports, so the rule holds even where lint-imports is skipped."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[3] / "apps" / "engine"
FORBIDDEN_ROOTS = {"django", "channels", "daphne", "channels_redis", "asgiref"}


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def violations(module: str) -> bool:
    root = module.split(".")[0]
    if root in FORBIDDEN_ROOTS:
        return True
    return module.startswith("apps.") and not (module == "apps.engine"
                                               or module.startswith("apps.engine."))


def engine_modules() -> list[Path]:
    return sorted(ENGINE.rglob("*.py"))


def test_the_engine_has_modules() -> None:
    assert len(engine_modules()) > 5


@pytest.mark.parametrize("path", engine_modules(), ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_module_imports_no_framework_and_no_other_app(path: Path) -> None:
    bad = [m for m in imported_modules(path) if violations(m)]
    assert bad == [], f"{path.name} imports {bad}"


@pytest.mark.parametrize("module", ["django.db", "channels.layers", "asgiref.sync",
                                    "apps.rooms.models", "channels_redis.core", "daphne"])
def test_the_rule_catches_each_forbidden_import(module: str) -> None:
    assert violations(module)


@pytest.mark.parametrize("module", ["apps.engine.messages", "httpx2", "pydantic", "mcp"])
def test_the_rule_allows_the_engine_and_libraries(module: str) -> None:
    assert not violations(module)
