"""The wiki port: what the wiki tools call, bound by the host to one run's team (DESIGN 3.7).

The tools never name a team: the host builds one port per run, for the run's team and the
person who started it, and hands it over as ``ToolContext.services["wiki"]``. Another team's
wiki is not reachable through any argument. Reads may go straight to the store; writes go
through the host's services (roles, authorship, the wiki's live events) and report where people
can see the change.

:class:`LocalWiki` is the port over a :class:`~apps.engine.wiki.WikiStore` alone, with a fixed
author: for the engine on its own (the CLI) and its tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from apps.engine.wiki import (
    Author,
    HistoryEntry,
    Page,
    PageInfo,
    SearchHit,
    WikiStore,
    WriteResult,
)

__all__ = ["WIKI_SERVICE", "LocalWiki", "StoreReads", "WikiChange", "WikiPort"]

WIKI_SERVICE = "wiki"
"""The ``ToolContext.services`` key of the run's wiki port."""


@dataclass(frozen=True, slots=True)
class WikiChange:
    """A committed write as the host reports it: the store's ``result``, the commit's
    ``author`` name and where people see it: ``page_url`` (the page in the browser),
    ``diff_url`` (the REST path of the change's diff) and ``diff_page_url`` (that diff in the
    browser); "" where the host has none."""

    result: WriteResult
    author: str
    page_url: str = ""
    diff_url: str = ""
    diff_page_url: str = ""


@runtime_checkable
class WikiPort(Protocol):
    """One run's view of its team's wiki. Every method may raise a
    :class:`~apps.engine.wiki.WikiError` subclass (the store's words, meant for the model), or
    :class:`~apps.engine.errors.ToolError` for a refusal the host decides (the person who
    started the run may no longer write)."""

    async def list(self, prefix: str = "") -> list[PageInfo]:
        """Files at ``main`` under ``prefix``, sorted by path."""
        ...

    async def read(self, path: str, rev: str = "HEAD") -> Page:
        """A page's text at ``rev`` (a 40-hex commit id or HEAD)."""
        ...

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """Lines of pages containing ``query`` literally, ignoring case."""
        ...

    async def history(self, path: str, *, limit: int) -> list[HistoryEntry]:
        """The commits that changed ``path``, newest first."""
        ...

    async def write(self, path: str, content: str, *, expected_blob: str | None, message: str,
                    call_id: str) -> WikiChange:
        """Create (``expected_blob`` None) or replace a page, as tool call ``call_id``."""
        ...

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool, message: str,
                   call_id: str) -> WikiChange:
        """Replace ``old`` by ``new`` in the page as it is at ``main`` now."""
        ...


class StoreReads:
    """The reads of a :class:`WikiPort`, straight from ``self.store`` in a worker thread (git
    processes block). Ports subclass it and add their writes."""

    store: WikiStore

    async def list(self, prefix: str = "") -> list[PageInfo]:
        return await asyncio.to_thread(self.store.list, prefix)

    async def read(self, path: str, rev: str = "HEAD") -> Page:
        return await asyncio.to_thread(self.store.read, path, rev)

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        return await asyncio.to_thread(lambda: self.store.search(query, limit=limit))

    async def history(self, path: str, *, limit: int) -> list[HistoryEntry]:
        return await asyncio.to_thread(lambda: self.store.history(path, limit=limit))


class LocalWiki(StoreReads):
    """A :class:`WikiPort` over ``store``; ``author(call_id)`` is who a write is by."""

    def __init__(self, store: WikiStore, author: Callable[[str], Author]) -> None:
        self.store = store
        self.author = author

    async def write(self, path: str, content: str, *, expected_blob: str | None, message: str,
                    call_id: str) -> WikiChange:
        author = self.author(call_id)
        result = await asyncio.to_thread(lambda: self.store.write(
            path, content, expected_blob=expected_blob, message=message, author=author))
        return WikiChange(result=result, author=author.name)

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool, message: str,
                   call_id: str) -> WikiChange:
        author = self.author(call_id)
        result = await asyncio.to_thread(lambda: self.store.edit(
            path, old, new, replace_all=replace_all, message=message, author=author))
        return WikiChange(result=result, author=author.name)
