"""The team wiki's tools (DESIGN 2.5, 3.7): WikiList, WikiRead, WikiSearch, WikiHistory (reads,
concurrency-safe) and WikiWrite, WikiEdit (one commit each, run alone).

Every call goes to the run's wiki port (``ToolContext.services["wiki"]``, :mod:`.port`), which
the host binds to the run's team: no argument can name another team's wiki.
"""

from apps.engine.tools.base import BaseTool
from apps.engine.tools.builtin.wiki.port import (
    WIKI_SERVICE,
    LocalWiki,
    StoreReads,
    WikiChange,
    WikiPort,
)
from apps.engine.tools.builtin.wiki.reads import (
    WikiHistoryTool,
    WikiListTool,
    WikiReadTool,
    WikiSearchTool,
)
from apps.engine.tools.builtin.wiki.writes import WikiEditTool, WikiWriteTool

__all__ = [
    "WIKI_SERVICE",
    "WIKI_TOOL_NAMES",
    "LocalWiki",
    "StoreReads",
    "WikiChange",
    "WikiEditTool",
    "WikiHistoryTool",
    "WikiListTool",
    "WikiPort",
    "WikiReadTool",
    "WikiSearchTool",
    "WikiWriteTool",
    "wiki_tools",
]


def wiki_tools() -> list[BaseTool]:
    """One of each wiki tool, in the order the model sees them."""
    return [WikiListTool(), WikiReadTool(), WikiSearchTool(), WikiWriteTool(), WikiEditTool(),
            WikiHistoryTool()]


WIKI_TOOL_NAMES = tuple(tool.spec.name for tool in wiki_tools())
