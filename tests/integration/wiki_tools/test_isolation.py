"""Another team's wiki is never reachable from a run (issue 10; DESIGN 4, isolation as a
matrix): one row per wiki tool, each a real run in Acme's room whose model tries to reach
Globex's wiki through the tool's arguments. The binding is by the run's team (no argument
names a team), and a path that climbs out is refused by the store. ``test_every_wiki_tool_has
_a_row`` fails when a wiki tool is added without one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import Team, User
from apps.engine.tools.builtin.wiki import WIKI_TOOL_NAMES
from apps.engine.tools.sandbox import sandbox_status
from apps.rooms.models import Conversation
from apps.wiki.stores import store_for
from tests.integration.wiki_tools.conftest import call, connect, results, script, seed, text_of

pytestmark = pytest.mark.django_db(transaction=True)
SANDBOXED, _ = sandbox_status("auto")

SECRET = "globex-launch-codes"
GLOBEX_PAGE = "Secret.md"
CLIMB = "../{globex}.git/Secret.md"

# (tool, arguments that aim at Globex, what Acme's run answers instead)
ROWS: list[tuple[str, dict[str, Any], str]] = [
    ("WikiList", {"prefix": ""}, "- Home.md"),
    ("WikiList", {"prefix": "../"}, "The wiki has no pages under '../' yet."),
    ("WikiRead", {"path": GLOBEX_PAGE}, "No such page."),
    ("WikiRead", {"path": CLIMB}, "a part of the path may not start with"),
    ("WikiSearch", {"query": SECRET}, f"No wiki page contains {SECRET!r}."),
    ("WikiHistory", {"path": GLOBEX_PAGE}, "No such page."),
    ("WikiWrite", {"path": CLIMB, "content": "pwned"}, "Nothing was changed."),
    ("WikiWrite", {"path": GLOBEX_PAGE, "content": "overwritten", "team_id": "{globex}"},
     "('team_id' was unexpected)"),
    ("WikiEdit", {"path": GLOBEX_PAGE, "old_string": SECRET, "new_string": "x"},
     "No such page."),
    ("WikiEdit", {"path": CLIMB, "old_string": SECRET, "new_string": "x"},
     "Nothing was changed."),
]


def _ids(row: tuple[str, dict[str, Any], str]) -> str:
    return f"{row[0]}-{'-'.join(sorted(row[1]))}"


def test_every_wiki_tool_has_a_row() -> None:
    assert {name for name, _, _ in ROWS} == set(WIKI_TOOL_NAMES)


def _aimed(arguments: dict[str, Any], globex: Team) -> dict[str, Any]:
    return {k: v.format(globex=globex.pk) if isinstance(v, str) else v
            for k, v in arguments.items()}


@pytest.mark.parametrize(("tool", "arguments", "answer"), ROWS, ids=map(_ids, ROWS))
async def test_a_run_never_reaches_another_teams_wiki(
        tool: str, arguments: dict[str, Any], answer: str, acme: Team, globex: Team,
        alice: User, conversation: Conversation, worker: None) -> None:
    globex_store = await sync_to_async(seed)(globex, {GLOBEX_PAGE: f"# Secret\n{SECRET}\n"})
    acme_store = await sync_to_async(seed)(acme, {"Home.md": "# Home\nAcme only.\n"})
    globex_head = await asyncio.to_thread(globex_store.head)
    acme_head = await asyncio.to_thread(acme_store.head)
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        call(tool, **_aimed(arguments, globex)), {"text": "tried"})})
    assert (await a.until_event("run_ended"))["status"] == "completed"
    [result] = results(a)
    text = text_of(result)
    assert answer in text
    # Nothing of Globex's page comes back: not its content, not its path in a listing or a hit.
    assert "# Secret" not in text and f"{SECRET}\n" not in text
    assert f"{GLOBEX_PAGE} — " not in text and f"{GLOBEX_PAGE}:" not in text
    assert await asyncio.to_thread(globex_store.head) == globex_head  # Globex untouched
    if tool in ("WikiWrite", "WikiEdit"):
        assert result["result"]["is_error"]
        assert await asyncio.to_thread(acme_store.head) == acme_head
    await a.close()


async def test_the_workspace_wiki_is_the_run_teams_only(
        acme: Team, globex: Team, alice: User, conversation: Conversation,
        worker: None) -> None:
    await sync_to_async(seed)(globex, {GLOBEX_PAGE: f"# Secret\n{SECRET}\n"})
    await sync_to_async(seed)(acme, {"Home.md": "# Home\nAcme only.\n"})
    globex_git = await sync_to_async(lambda: store_for(globex).path)()
    acme.tool_policy = {"exempt": ["Bash"]}
    await acme.asave(update_fields=["tool_policy"])
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        call("Grep", pattern=SECRET),
        call("Glob", pattern="wiki/**"),
        call("Read", file_path=f"wiki/../../{globex.pk}.git/HEAD"),
        call("Read", file_path=str(globex_git / "HEAD")),
        call("Bash", command=f"cat wiki/{GLOBEX_PAGE}; ls {globex_git} {globex_git.parent}; "
                             f"grep -rn {SECRET} ."),
        {"text": "tried"})})
    assert (await a.until_event("run_ended"))["status"] == "completed"
    by_name = {}
    for result in results(a):
        by_name.setdefault(result["name"], []).append(text_of(result))
    assert by_name["Grep"] == [f"No matches found for {SECRET!r}."]
    assert by_name["Glob"] == ["wiki/Home.md"]
    assert all("outside the workspace" in text for text in by_name["Read"])
    [bash] = by_name["Bash"]
    assert SECRET not in bash
    if SANDBOXED:  # unsandboxed, a command runs with the server's rights (the result says so)
        assert "No such file or directory" in bash and "not sandboxed" not in bash
    await a.close()
