"""A run's team wiki: the engine's wiki port, the read-only ``wiki/`` mount and the system
prompt's wiki section (issue 10; DESIGN 3.7).

Everything here is bound to the run's team (read from the database when the run was set up)
and, for writes, to the person who started the run: no tool argument can name a team. Reads go
straight to the store in a worker thread; writes go through :mod:`apps.wiki.services`, which
checks the person's role now (a viewer, or someone who left the team, cannot write), commits as
``agent (for <person>)`` with the conversation, run and tool-call trailers, and tells the
wiki's open pages.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, urlencode

from channels.db import database_sync_to_async

from apps.accounts.models import Team, User
from apps.common.errors import ApplicationError
from apps.engine.errors import ToolError
from apps.engine.tools.builtin.wiki import StoreReads, WikiChange
from apps.engine.tools.mounts import ReadOnlyMounts
from apps.engine.wiki import (
    Author,
    WikiError,
    WikiStore,
    WriteResult,
    is_page,
)
from apps.wiki.authors import agent_author
from apps.wiki.services import page_edit, page_save
from apps.wiki.stores import store_for

__all__ = ["PROMPT_PAGES", "RunWiki", "wiki_diff_path", "wiki_mounts", "wiki_page_path",
           "wiki_prompt"]

PROMPT_PAGES = 20
"""Top-level pages the system prompt names at most (with their titles)."""

_TITLE_CHARS = 80
MOUNT_NOTE = "it is a read-only copy of the team wiki; change pages with WikiWrite or WikiEdit"


def wiki_page_path(team_id: int, path: str) -> str:
    """The page ``path`` in the browser (``/teams/<team id>/wiki/<path>``)."""
    return f"/teams/{team_id}/wiki/{quote(path, safe='/')}"


def wiki_diff_path(team_id: int, path: str, from_rev: str, to_rev: str) -> str:
    """The REST path of the page's diff between two commits."""
    query = urlencode({"from": from_rev, "to": to_rev})
    return f"/api/teams/{team_id}/wiki/diff/{quote(path, safe='/')}?{query}"


def wiki_diff_page_path(team_id: int, path: str, from_rev: str, to_rev: str) -> str:
    """The same diff as a page in the browser."""
    query = urlencode({"from": from_rev, "to": to_rev})
    return f"/teams/{team_id}/wiki/-/diff/{quote(path, safe='/')}?{query}"


class RunWiki(StoreReads):
    """The :class:`~apps.engine.tools.builtin.wiki.WikiPort` of one run: ``team``'s wiki,
    written for ``user`` (who started the run; None: nobody, so no writes) in conversation
    ``conversation_id`` and run ``run_id``."""

    def __init__(self, *, team: Team, user: User | None, conversation_id: int,
                 run_id: int, store: WikiStore | None = None) -> None:
        self.team = team
        self.user = user
        self.conversation_id = conversation_id
        self.run_id = run_id
        self._store = store

    @property
    def store(self) -> WikiStore:
        if self._store is None:
            self._store = store_for(self.team)
        return self._store

    # -- writes: through the wiki's services -------------------------------------------------
    async def write(self, path: str, content: str, *, expected_blob: str | None, message: str,
                    call_id: str) -> WikiChange:
        return await database_sync_to_async(self._commit)(call_id, lambda author: page_save(
            team=self.team, by=self._writer(), path=path, content=content,
            expected_blob=expected_blob, message=message, author=author))

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool, message: str,
                   call_id: str) -> WikiChange:
        return await database_sync_to_async(self._commit)(call_id, lambda author: page_edit(
            team=self.team, by=self._writer(), path=path, old=old, new=new,
            replace_all=replace_all, message=message, author=author))

    def _writer(self) -> User:
        if self.user is None:
            raise ToolError("Nobody can be the author of a wiki change in this run (the person "
                            "who started it is gone); the wiki was not changed.")
        return self.user

    def _commit(self, call_id: str, save: Callable[[Author], WriteResult]) -> WikiChange:
        author = agent_author(self._writer(), conversation_id=self.conversation_id,
                              run_id=self.run_id, tool_call_id=call_id)
        before = self.store.head()
        with _wiki_errors(self._writer()):
            result = save(author)
        return self._change(result, author, before)

    def _change(self, result: WriteResult, author: Author, before: str | None) -> WikiChange:
        """Where people see ``result``: the page, and the diff from the page's previous commit
        (for a new page, from the wiki's commit before the write)."""
        from_rev = before or result.commit
        try:
            entries = self.store.history(result.path, limit=2)
        except WikiError:
            entries = []
        commits = [entry.commit.commit for entry in entries]
        if result.commit in commits and commits.index(result.commit) + 1 < len(commits):
            from_rev = commits[commits.index(result.commit) + 1]
        team_id = self.team.pk
        return WikiChange(
            result=result, author=author.name,
            page_url=wiki_page_path(team_id, result.path),
            diff_url=wiki_diff_path(team_id, result.path, from_rev, result.commit),
            diff_page_url=wiki_diff_page_path(team_id, result.path, from_rev, result.commit))


@contextmanager
def _wiki_errors(user: User) -> Iterator[None]:
    """The services' refusals as the port raises them: the store's own WikiError (its words
    tell the model what to fix; a conflict keeps the current page), else a ToolError."""
    try:
        yield
    except ApplicationError as e:
        if isinstance(e.__cause__, WikiError):
            raise e.__cause__ from None
        raise ToolError(f"The wiki refused the change for {user.shown_name}, who started this "
                        f"run: {e.message} The wiki was not changed.") from e


def wiki_mounts(store_of: Callable[[], WikiStore]) -> ReadOnlyMounts:
    """The run's read-only mount table: ``wiki/`` is the snapshot of ``main``, built (or found
    in the store's cache) the first time a tool of the run looks there."""
    def snapshot() -> Path | None:
        try:
            return store_of().snapshot()
        except WikiError:
            return None  # shown empty; the wiki tools report the error themselves
    return ReadOnlyMounts({"wiki": snapshot}, notes={"wiki": MOUNT_NOTE})


def wiki_prompt(store: WikiStore) -> str:
    """The system prompt's wiki section: what the wiki is for, how to use the tools, and what
    is in it (the top-level pages with their titles and the folders; at most about 30 lines).
    Blocking (git): call it where the run is set up, in a worker thread.

    Kept per repository until ``main`` moves (:meth:`WikiStore.main_ref_key`): opening the
    repository was a millisecond of every run's setup (issue 20), for a section that changes
    only when someone writes to the wiki."""
    key = store.main_ref_key()
    cached = _prompts.get(store.path)
    if key is not None and cached is not None and cached[0] == key:
        return cached[1]
    prompt, complete = _wiki_section(store)
    # kept only when main did not move while it was listed: the key then names what was read
    if key is not None and complete and store.main_ref_key() == key:
        with _prompts_lock:  # setups run in several threads
            _prompts.pop(store.path, None)
            if len(_prompts) >= _PROMPTS_KEPT:
                del _prompts[next(iter(_prompts))]  # the least recently written
            _prompts[store.path] = (key, prompt)
    return prompt


_PROMPTS_KEPT = 1024
_prompts: dict[Path, tuple[bytes, str]] = {}
"""wiki_prompt's cache: repository -> (its main_ref_key, the section)."""
_prompts_lock = threading.Lock()


def _wiki_section(store: WikiStore) -> tuple[str, bool]:
    """The section, and whether it shows the wiki (False: it says the wiki cannot be read)."""
    lines = [
        "The team has a wiki: its shared memory, which everyone in the team reads and edits. "
        "Look things up there before asking people, and write down what the team decides "
        "(decisions, conventions, how-tos) so that it is known in later conversations. Tools: "
        "WikiList and WikiSearch find pages, WikiRead reads one (with its blob id), WikiWrite "
        "creates a page or replaces one (pass the blob id you read as expected_blob), WikiEdit "
        "replaces exact text in a page, WikiHistory shows who changed a page and when. Paths "
        "are like \"Home.md\" or \"ops/Runbook.md\". Every change is a commit the whole room "
        "sees. A read-only copy of the wiki is in your workspace at wiki/ (Read, Glob, Grep and "
        "shell commands like `grep -r` see it; it is taken when you first look, so use WikiRead "
        "for a page you just changed).",
    ]
    try:
        files = store.list("")
    except WikiError as e:
        return "\n".join([*lines, f"(The wiki cannot be read right now: {e.message})"]), False
    pages = [f for f in files if is_page(f.path)]
    if not pages:
        return "\n".join([*lines, "The wiki is empty so far."]), True
    top = [f for f in pages if "/" not in f.path]
    folders: dict[str, int] = {}
    for f in pages:
        if "/" in f.path:
            folder = f.path.split("/", 1)[0]
            folders[folder] = folders.get(folder, 0) + 1
    lines.append(f"The wiki has {len(pages):,} pages. At its top level:")
    lines.extend(f"- {f.path}: {_one_line(f.title)}" for f in top[:PROMPT_PAGES])
    if len(top) > PROMPT_PAGES:
        lines.append(f"- ... and {len(top) - PROMPT_PAGES:,} more (WikiList shows them all)")
    if folders:
        shown = sorted(folders.items())[:PROMPT_PAGES]
        text = ", ".join(f"{name}/ ({count})" for name, count in shown)
        more = len(folders) - len(shown)
        lines.append("Folders: " + text + (f", and {more} more" if more > 0 else "") + ".")
    return "\n".join(lines), True


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _TITLE_CHARS else flat[:_TITLE_CHARS - 1] + "…"
