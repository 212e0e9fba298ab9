"""MCP prompts through the manager (issue 24), against the SDK test server over Streamable
HTTP (2026-07-28) and HTTP+SSE (2025-11-25): listed with their arguments (a CJK name), expanded
into blocks, and a ``prompts/list_changed`` becomes an ``mcp_list_changed`` event after which
the new prompt is listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.engine.events import McpListChanged, RuntimeEvent
from apps.engine.mcp import McpManager
from apps.engine.mcp.prompts import PromptArgumentInfo, prompt_blocks
from apps.engine.messages import TextBlock
from tests.unit.engine.mcp.kit import call, http_spec, serve_http, wait_until
from tests.unit.engine.mcp.py_server import build_server


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
async def test_prompts_are_listed_expanded_and_followed_when_they_change(
        transport: str, tmp_path: Path) -> None:
    events: list[RuntimeEvent] = []
    async with serve_http(build_server(), transport) as url, McpManager(
            [http_spec("笔记", url, transport)], allow_private_network=True,
            on_event=events.append) as manager:
        [summary] = [p for p in await manager.prompts() if p.name == "总结"]
        assert (summary.server, summary.description) == ("笔记", "总结一个主题")
        assert summary.arguments == (PromptArgumentInfo("主题", "", True),)
        expanded = await manager.get_prompt("笔记", "总结", {"主题": "乌龙茶"})
        assert prompt_blocks(expanded) == [TextBlock(text="请用三句话总结：乌龙茶")]
        [add] = [t.spec.name for t in manager.registry if "add_prompt" in t.spec.name]
        await call(manager.registry, add, tmp_path, name="晚安")  # (the tool name is hashed)
        await wait_until(lambda: McpListChanged(server="笔记", list="prompts") in events,
                         what="the prompts list_changed event")
        assert "晚安" in {p.name for p in await manager.prompts()}
