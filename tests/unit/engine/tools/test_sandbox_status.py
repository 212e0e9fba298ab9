"""The sandbox status a run asks for (issue 22): the Bash notice and every run's MCP servers
ask each time, so a status already known answers without a trip through the event loop (no
thread hop, no ``PATH`` search); a changed ``PATH`` or setting gets its own answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.engine.tools.builtin.bash import BashTool
from apps.engine.tools.sandbox import resolve_status


async def test_a_known_status_answers_at_once() -> None:
    tool = BashTool()
    await tool.sandbox("auto")  # the first call probes, in a thread
    again = tool.sandbox("auto")
    with pytest.raises(StopIteration) as done:  # finished in one step: it never waited
        again.send(None)
    assert done.value.value == resolve_status("auto")


async def test_another_path_or_setting_gets_its_own_answer(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    tool = BashTool()
    await tool.sandbox("auto")
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap in sight
    assert (await tool.sandbox("auto")).reason == \
        "not sandboxed: bubblewrap (bwrap) is not installed"
    assert (await tool.sandbox("off")).reason == \
        "not sandboxed: the sandbox is turned off in the settings"
    with pytest.raises(ValueError, match="unknown sandbox setting"):
        await tool.sandbox("maybe")
