"""``wiki/`` in a run's workspace (issue 10): the snapshot of the team wiki at HEAD, read-only.
Real runs, real git, real bubblewrap: Bash ``cat wiki/Home.md`` and ``grep -r`` work in the
sandbox, Write to ``wiki/x.md`` is refused, and a write through the tools is in the next run's
snapshot."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import Team, User
from apps.engine.tools.sandbox import sandbox_status
from apps.rooms.models import Conversation
from apps.rooms.workspaces import workspace_path
from tests.integration.wiki_tools.conftest import call, connect, results, script, seed, text_of

pytestmark = pytest.mark.django_db(transaction=True)

SANDBOXED, SANDBOX_REASON = sandbox_status("auto")
HOME = "# Home\nWelcome to the Acme wiki.\n"
RUNBOOK = "# Deploy\nRun `make deploy` from main.\n"


async def run(client, text: str) -> list[dict]:
    """Send a script, wait for the run's end; the tool results of that run."""
    before = len(results(client))
    await client.send({"type": "send", "client_id": f"m{id(text)}", "text": text})
    ended = await client.until_event("run_ended")
    assert ended["status"] == "completed", ended
    return results(client)[before:]


@pytest.mark.skipif(not SANDBOXED, reason=SANDBOX_REASON)
async def test_bash_reads_the_wiki_in_the_sandbox_and_write_is_refused(
        acme: Team, alice: User, conversation: Conversation, worker: None) -> None:
    acme.tool_policy = {"exempt": ["Write", "Bash"]}  # no approval waits in this test
    await acme.asave(update_fields=["tool_policy"])
    store = await sync_to_async(seed)(acme, {"Home.md": HOME, "Runbooks/Deploy.md": RUNBOOK})
    a, _ = await connect(alice, conversation.pk)
    cat, grep, write, overwrite, new_page = await run(a, script(
        call("Bash", command="cat wiki/Home.md"),
        {"text": "read"},
        call("Bash", command="grep -rn 'make deploy' wiki/"),
        {"text": "searched"},
        call("Write", file_path="wiki/x.md", content="not here"),
        {"text": "refused"},
        call("Bash", command="echo evil > wiki/Home.md"),
        {"text": "refused too"},
        call("WikiWrite", path="New.md", content="# New\nWritten by the agent.\n"),
        {"text": "written"}))
    assert not cat["result"]["is_error"] and text_of(cat).startswith(HOME)
    assert "wiki/Runbooks/Deploy.md:2:Run `make deploy` from main." in text_of(grep)
    assert write["result"]["is_error"]
    assert "'wiki/x.md' is under wiki/, which is mounted read-only" in text_of(write)
    assert overwrite["result"]["is_error"] and "Read-only file system" in text_of(overwrite)
    assert not new_page["result"]["is_error"], text_of(new_page)
    workspace = await sync_to_async(workspace_path)(conversation)
    assert not (workspace / "wiki" / "x.md").exists()
    assert (await asyncio.to_thread(store.read, "Home.md")).content == HOME

    # This run's wiki/ was taken before its write; the next run's shows it.
    cat_new, read_new = await run(a, script(
        call("Bash", command="cat wiki/New.md"),
        {"text": "and"},
        call("Read", file_path="wiki/New.md"),
        {"text": "seen"}))
    assert "Written by the agent." in text_of(cat_new)
    assert "Written by the agent." in text_of(read_new)
    await a.close()


async def test_the_host_file_tools_see_the_wiki_without_the_sandbox(
        settings, acme: Team, alice: User, conversation: Conversation, worker: None) -> None:
    settings.CONFAB = {**settings.CONFAB, "SANDBOX": "off"}
    acme.tool_policy = {"exempt": ["Edit"]}
    await acme.asave(update_fields=["tool_policy"])
    await sync_to_async(seed)(acme, {"Home.md": HOME, "Runbooks/Deploy.md": RUNBOOK})
    a, _ = await connect(alice, conversation.pk)
    done = {r["name"]: r for r in await run(a, script(
        call("Read", file_path="wiki/Home.md"),
        call("Glob", pattern="wiki/**/*.md"),
        call("Grep", pattern="make deploy", path="wiki"),
        {"text": "looked"},
        call("Edit", file_path="wiki/Home.md", old_string="Welcome", new_string="Bye"),
        {"text": "tried"},
        call("Bash", command="ls wiki"),
        {"text": "done"}))}
    read, glob, grep, edit, bash = (done[n] for n in ("Read", "Glob", "Grep", "Edit", "Bash"))
    assert "Welcome to the Acme wiki." in text_of(read)
    assert sorted(text_of(glob).splitlines()) == ["wiki/Home.md", "wiki/Runbooks/Deploy.md"]
    assert text_of(grep) == "wiki/Runbooks/Deploy.md:2:Run `make deploy` from main."
    assert edit["result"]["is_error"] and "mounted read-only" in text_of(edit)
    # Unsandboxed, Bash runs with the server's rights: no wiki/ there, and it says so.
    assert "wiki/ is mounted only inside the sandbox" in text_of(bash)
    await a.close()
