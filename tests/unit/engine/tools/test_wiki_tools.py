"""The wiki tools against a real WikiStore (real git) through the engine's LocalWiki port:
argument handling, what the model reads back, conflicts and their retry, refusals as errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apps.engine.errors import ToolError
from apps.engine.events import WikiChanged
from apps.engine.tools.base import Concurrency, ToolCategory, ToolContext, ToolEnvironment
from apps.engine.tools.builtin.wiki import WIKI_SERVICE, LocalWiki, wiki_tools
from apps.engine.tools.defaults import default_tools
from apps.engine.tools.registry import ToolRegistry
from apps.engine.wiki import Author, WikiLimits, WikiStore

ALICE = Author(name="Alice", email="user-1@users.confab.invalid")
TOOLS = ToolRegistry(wiki_tools())
READS = ["WikiList", "WikiRead", "WikiSearch", "WikiHistory"]
WRITES = ["WikiWrite", "WikiEdit"]


def agent(call_id: str) -> Author:
    return Author(name="agent (for Alice)", email="user-1@users.confab.invalid",
                  trailers={"Confab-User": "1", "Confab-Tool-Call": call_id})


@pytest.fixture
def store(tmp_path: Path) -> WikiStore:
    return WikiStore(tmp_path / "1.git", snapshots=tmp_path / "snapshots",
                     limits=WikiLimits(page_bytes=2_000))


class Caller:
    """Calls a wiki tool as the executor would: prepare, validate, invoke (ToolError kept)."""

    def __init__(self, store: WikiStore, tmp_path: Path) -> None:
        self.port = LocalWiki(store, agent)
        self.events: list[Any] = []
        self.workspace = tmp_path
        self.calls = 0

    async def __call__(self, name: str, max_result_chars: int = 30_000, **arguments: Any
                       ) -> tuple[str, bool]:
        tool = TOOLS.get(name)
        assert tool is not None
        args = tool.prepare_arguments(arguments)
        problem = TOOLS.validate(name, args)
        if problem is not None:
            return problem, True
        self.calls += 1

        async def emit(event: Any) -> None:
            self.events.append(event)

        ctx = ToolContext(f"call_{self.calls}", args, self.workspace, emit,
                          env=ToolEnvironment(max_result_chars=max_result_chars),
                          services={WIKI_SERVICE: self.port})
        try:
            out = await tool.invoke(ctx)
        except ToolError as e:
            return str(e), True
        assert isinstance(out.content, str)
        return out.content, out.is_error


@pytest.fixture
def call(store: WikiStore, tmp_path: Path) -> Caller:
    return Caller(store, tmp_path)


def test_reads_run_beside_others_and_writes_alone_unasked_by_default() -> None:
    for name in READS:
        spec = TOOLS.get(name).spec
        assert spec.concurrency is Concurrency.ALWAYS and not spec.requires_approval
    for name in WRITES:
        spec = TOOLS.get(name).spec
        assert spec.concurrency is Concurrency.NEVER and spec.requires_approval is False
    assert {TOOLS.get(n).spec.category for n in READS + WRITES} == {ToolCategory.TEAM}
    assert [t.spec.name for t in default_tools()][-6:] == [
        "WikiList", "WikiRead", "WikiSearch", "WikiWrite", "WikiEdit", "WikiHistory"]
    assert "WikiWrite" not in default_tools(wiki=False)


VALID = {"WikiList": {}, "WikiRead": {"path": "Home.md"}, "WikiSearch": {"query": "x"},
         "WikiHistory": {"path": "Home.md"}, "WikiWrite": {"path": "Home.md", "content": "x"},
         "WikiEdit": {"path": "Home.md", "old_string": "a", "new_string": "b"}}


@pytest.mark.parametrize("name", READS + WRITES)
async def test_no_argument_can_name_a_team(call: Caller, name: str) -> None:
    for key in ("team", "team_id", "repository"):
        text, is_error = await call(name, **VALID[name], **{key: "globex"})
        assert is_error and f"('{key}' was unexpected)" in text


async def test_an_agent_writes_a_page_and_the_room_hears_of_it(call: Caller,
                                                               store: WikiStore) -> None:
    text, is_error = await call("WikiWrite", path="/Decisions.md",
                                content="# Decisions\n- Ship on Fridays.\n",
                                message="Record the shipping decision\n  and why")
    assert not is_error, text
    page = store.read("Decisions.md")
    assert text == f"Created Decisions.md: commit {page.commit}, blob {page.blob}."
    [event] = call.events
    assert isinstance(event, WikiChanged)
    assert (event.path, event.commit, event.author, event.summary, event.created,
            event.call_id) == ("Decisions.md", page.commit, "agent (for Alice)",
                               "Record the shipping decision and why", True, "call_1")
    [entry] = store.history("Decisions.md")
    assert entry.commit.author_name == "agent (for Alice)"
    assert entry.commit.trailers["Confab-Tool-Call"] == "call_1"


async def test_list_read_search_and_history(call: Caller, store: WikiStore) -> None:
    assert (await call("WikiList"))[0] == "The wiki has no pages yet. Create one with WikiWrite."
    store.commit_files({"Home.md": "# Welcome\nHello team.\n",
                        "ops/Runbook.md": "# Run\n会议记录\n"}, message="Seed", author=ALICE)
    listed, _ = await call("WikiList")
    home = store.read("Home.md")
    assert listed.splitlines()[0] == "2 files in the wiki:"
    assert "- Home.md — \"Welcome\" · updated " in listed
    assert f"by Alice · blob {home.blob}" in listed
    assert (await call("WikiList", prefix="ops/"))[0].count("\n- ") == 1
    text, _ = await call("WikiRead", path="Home.md")
    assert text == (f"[wiki page Home.md · blob {home.blob} · commit {home.commit} · 2 lines]\n"
                    "     1\t# Welcome\n     2\tHello team.")
    assert (await call("WikiSearch", query="会议"))[0] == "ops/Runbook.md:2: 会议记录"
    assert (await call("WikiSearch", query="-e"))[0] == "No wiki page contains '-e'."
    history, _ = await call("WikiHistory", path="Home.md")
    assert history.splitlines()[1].startswith(f"- {home.commit} · ")
    assert history.endswith("· Alice — Seed")
    older, _ = await call("WikiRead", path="Home.md", rev=home.commit.upper())
    assert "Hello team." in older


async def test_a_long_page_is_read_a_range_at_a_time(call: Caller, store: WikiStore) -> None:
    store.write("Long.md", "".join(f"line {i}\n" for i in range(1, 151)), expected_blob=None,
                message="Long", author=ALICE)
    text, _ = await call("WikiRead", path="Long.md", max_result_chars=1_000)
    assert "     1\tline 1" in text and "line 150" not in text
    assert "Call WikiRead with offset=" in text
    next_offset = int(text.rsplit("offset=", 1)[1].split(" ")[0])
    rest, _ = await call("WikiRead", path="Long.md", offset=str(next_offset), limit=3)
    assert rest.splitlines()[1] == f"{next_offset:>6}\tline {next_offset}"
    assert len(rest.splitlines()) == 6  # header, 3 lines, blank, note
    past, _ = await call("WikiRead", path="Long.md", offset=500)
    assert "offset 500 is past the end: the page has 150 lines" in past


async def test_a_conflict_comes_back_with_the_current_page_and_the_retry_succeeds(
        call: Caller, store: WikiStore) -> None:
    first = store.write("Plan.md", "# Plan\nStatus: draft\n", expected_blob=None,
                        message="Plan", author=ALICE)
    store.write("Plan.md", "# Plan\nStatus: approved by Bob\n", expected_blob=first.blob,
                message="Bob approves", author=ALICE)
    text, is_error = await call("WikiWrite", path="Plan.md", content="# Plan\nStatus: rejected\n",
                                expected_blob=first.blob)
    current = store.read("Plan.md")
    assert is_error and text.startswith("Conflict: ")
    assert f"The page as it is now (blob {current.blob}" in text
    assert "<current>\n# Plan\nStatus: approved by Bob\n" in text
    assert "<merged>" in text and "<<<<<<<" in text
    assert f'call WikiWrite again with expected_blob="{current.blob}"' in text
    assert call.events == [] and store.read("Plan.md").content.endswith("approved by Bob\n")
    retry, is_error = await call("WikiWrite", path="Plan.md", expected_blob=current.blob,
                                 content="# Plan\nStatus: approved by Bob, then rejected\n")
    assert not is_error and retry.startswith("Updated Plan.md: commit ")
    assert [e.created for e in call.events] == [False]


async def test_create_only_of_an_existing_page_is_a_conflict(call: Caller,
                                                            store: WikiStore) -> None:
    store.write("Home.md", "# Home\n", expected_blob=None, message="Home", author=ALICE)
    text, is_error = await call("WikiWrite", path="Home.md", content="# Mine\n")
    assert is_error and "<current>\n# Home\n" in text and "<merged>" not in text


async def test_writing_what_the_page_already_says_tells_the_room_nothing(
        call: Caller, store: WikiStore) -> None:
    base = store.write("Home.md", "# Home\n", expected_blob=None, message="Home", author=ALICE)
    text, is_error = await call("WikiWrite", path="Home.md", content="# Home\n",
                                expected_blob=base.blob)
    assert not is_error and text == f"Home.md already had this content: nothing to commit " \
        f"(blob {base.blob})."
    assert call.events == [] and store.head() == base.commit


async def test_a_stale_write_of_another_part_is_merged(call: Caller, store: WikiStore) -> None:
    base = store.write("Notes.md", "a\nb\nc\nd\ne\n", expected_blob=None, message="n",
                       author=ALICE)
    store.write("Notes.md", "A\nb\nc\nd\ne\n", expected_blob=base.blob, message="n2",
                author=ALICE)
    text, is_error = await call("WikiWrite", path="Notes.md", content="a\nb\nc\nd\nE\n",
                                expected_blob=base.blob)
    assert not is_error and "were merged" in text
    assert store.read("Notes.md").content == "A\nb\nc\nd\nE\n"
    assert call.events[0].merged is True


async def test_edit_applies_to_the_current_page(call: Caller, store: WikiStore) -> None:
    store.write("Home.md", "# Home\nOwner: nobody\n", expected_blob=None, message="h",
                author=ALICE)
    text, is_error = await call("WikiEdit", path="Home.md", old_string="nobody",
                                new_string="Alice")
    assert not is_error and text.startswith("Updated Home.md")
    assert store.read("Home.md").content == "# Home\nOwner: Alice\n"
    assert call.events[0].summary == "Edit Home.md"
    missing, is_error = await call("WikiEdit", path="Home.md", old_string="nobody",
                                   new_string="Bob")
    assert is_error and "Nothing was changed." in missing


@pytest.mark.parametrize(("arguments", "expected"), [
    ({"path": "../etc/passwd.md", "content": "x"}, "Nothing was changed."),
    ({"path": ".git/config.md", "content": "x"}, "Nothing was changed."),
    ({"path": "Home", "content": "x"}, "Nothing was changed."),
    ({"path": "Big.md", "content": "x" * 3_000}, "Nothing was changed."),
    ({"path": "Home.md", "content": "x", "expected_blob": "--output=Home.md"},
     "does not match"),
])
async def test_refused_writes_are_errors_the_model_can_read(call: Caller, store: WikiStore,
                                                            arguments: dict[str, Any],
                                                            expected: str) -> None:
    text, is_error = await call("WikiWrite", **arguments)
    assert is_error and expected in text
    assert store.head() is None and call.events == []


async def test_workspace_paths_get_a_hint(call: Caller) -> None:
    text, is_error = await call("WikiRead", path="wiki/Home.md")
    assert is_error and '"wiki/Home.md" in the workspace is "Home.md"' in text


async def test_without_a_port_the_tools_say_so(tmp_path: Path) -> None:
    async def emit(event: Any) -> None:
        pass

    tool = TOOLS.get("WikiList")
    with pytest.raises(ToolError, match="not available in this run"):
        await tool.invoke(ToolContext("c", {}, tmp_path, emit))


@pytest.mark.parametrize(("name", "arguments"), [
    ("WikiRead", {"path": "../etc/passwd.md"}),
    ("WikiHistory", {"path": ".git/config.md"}),
])
async def test_a_refused_read_does_not_claim_to_have_changed_nothing(
        call: Caller, store: WikiStore, name: str, arguments: dict[str, Any]) -> None:
    store.write("Home.md", "# Home\n", expected_blob=None, message="h", author=ALICE)
    text, is_error = await call(name, **arguments)
    assert is_error and text and "nothing was changed" not in text.lower()


async def test_an_unavailable_wiki_says_nothing_was_changed_only_to_writes(
        call: Caller, store: WikiStore) -> None:
    base = store.write("Home.md", "# Home\n", expected_blob=None, message="h", author=ALICE)
    (store.path / "objects").rename(store.path / "objects-gone")  # git cannot open it now
    read, read_error = await call("WikiRead", path="Home.md")
    wrote, write_error = await call("WikiWrite", path="Home.md", content="x",
                                    expected_blob=base.blob)
    assert read_error and read.startswith("The wiki is unavailable right now (")
    assert read.endswith(". Try again in a moment.") and "nothing was changed" not in read
    assert write_error and wrote.endswith("; nothing was changed. Try again in a moment.")


async def test_an_edit_that_changes_nothing_is_refused_in_the_tools_own_words(
        call: Caller, store: WikiStore) -> None:
    store.write("Home.md", "# Home\n", expected_blob=None, message="h", author=ALICE)
    text, is_error = await call("WikiEdit", path="Home.md", old_string="Home",
                                new_string="Home")
    assert is_error and text == "new_string must differ from old_string. Nothing was changed."
    assert len(store.history("Home.md")) == 1


async def test_search_takes_queries_up_to_the_stores_200_characters(call: Caller,
                                                                   store: WikiStore) -> None:
    store.write("Home.md", "# Home\n", expected_blob=None, message="h", author=ALICE)
    longest, is_error = await call("WikiSearch", query="q" * 200)
    assert not is_error and longest.startswith("No wiki page contains")
    over, is_error = await call("WikiSearch", query="q" * 201)
    assert is_error and "is too long" in over
