"""The built-in tool set a run gets by default (DESIGN 2.5), in the order the model sees it."""

from __future__ import annotations

from apps.engine.tools.builtin.ask_user import AskUserTool
from apps.engine.tools.builtin.bash import BashTool
from apps.engine.tools.builtin.edit import EditTool
from apps.engine.tools.builtin.glob import GlobTool
from apps.engine.tools.builtin.grep import GrepTool
from apps.engine.tools.builtin.read import ReadTool
from apps.engine.tools.builtin.task import TaskTool
from apps.engine.tools.builtin.todo_write import TodoWriteTool
from apps.engine.tools.builtin.web_fetch import WebFetchTool
from apps.engine.tools.builtin.wiki import wiki_tools
from apps.engine.tools.builtin.write import WriteTool
from apps.engine.tools.registry import ToolRegistry

__all__ = ["default_tools"]


def default_tools(*, ask_user: bool = True, wiki: bool = True) -> ToolRegistry:
    """A fresh registry of the built-in tools; ``ask_user=False`` leaves AskUser out (for a
    host with nobody to ask), ``wiki=False`` the wiki tools (for a host without a wiki port)."""
    tools = [BashTool(), ReadTool(), WriteTool(), EditTool(), GlobTool(), GrepTool(),
             WebFetchTool(), TodoWriteTool(), TaskTool()]
    if ask_user:
        tools.append(AskUserTool())
    if wiki:
        tools.extend(wiki_tools())
    return ToolRegistry(tools)
