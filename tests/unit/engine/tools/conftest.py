"""A workspace and an outside directory per test, and ``run``: call a tool the way the executor
will (prepare the arguments, validate them against the tool's schema, invoke with a context)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from apps.engine.tools.base import Tool, ToolContext, ToolEnvironment, ToolOutput
from apps.engine.tools.registry import ToolRegistry

Run = Callable[..., Awaitable[ToolOutput]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a secret the tools must never reach."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("top secret\n")
    return directory


@pytest.fixture
def events() -> list[Any]:
    return []


@pytest.fixture
def run(workspace: Path, events: list[Any]) -> Run:
    async def emit(event: Any) -> None:
        events.append(event)

    async def run_tool(tool: Tool, *, max_result_chars: int = 30_000,
                       **arguments: Any) -> ToolOutput:
        args = tool.prepare_arguments(arguments)
        error = ToolRegistry([tool]).validate(tool.spec.name, args)
        assert error is None, error
        ctx = ToolContext(call_id="call_1", arguments=args, workspace=workspace, emit=emit,
                          env=ToolEnvironment(max_result_chars=max_result_chars))
        return await tool.invoke(ctx)

    return run_tool
