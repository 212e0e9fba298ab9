"""The read-only mount table: Read, Glob and Grep see ``wiki/`` (a real wiki's snapshot);
Write and Edit refuse it; links stay confined; the snapshot is built only when first needed;
Bash sees it inside bubblewrap, read-only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from apps.engine.errors import ToolError
from apps.engine.tools.base import ToolContext, ToolEnvironment
from apps.engine.tools.builtin.bash import BashTool
from apps.engine.tools.builtin.edit import edit_file
from apps.engine.tools.builtin.glob import glob_files
from apps.engine.tools.builtin.grep import grep_files
from apps.engine.tools.builtin.read import read_file
from apps.engine.tools.builtin.write import write_text
from apps.engine.tools.mounts import ReadOnlyMounts
from apps.engine.tools.sandbox import bwrap_argv, sandbox_status
from apps.engine.tools.workspace import locate
from apps.engine.wiki import Author, WikiStore

SANDBOXED, SANDBOX_REASON = sandbox_status("auto")
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason=SANDBOX_REASON)
ALICE = Author(name="Alice", email="user-1@users.confab.invalid")
NOTE = "it is a read-only copy of the team wiki; change pages with WikiWrite or WikiEdit"


@pytest.fixture
def store(tmp_path: Path) -> WikiStore:
    wiki = WikiStore(tmp_path / "wiki" / "1.git", snapshots=tmp_path / "wiki" / "snapshots")
    wiki.commit_files({"Home.md": "# Home\nWelcome to Acme.\n",
                       "ops/Runbook.md": "# Runbook\nRestart with `make restart`.\n"},
                      message="Seed", author=ALICE)
    return wiki


class Counting:
    """A mount source that counts how often it is asked."""

    def __init__(self, store: WikiStore) -> None:
        self.store, self.calls = store, 0

    def __call__(self) -> Path | None:
        self.calls += 1
        return self.store.snapshot()


@pytest.fixture
def source(store: WikiStore) -> Counting:
    return Counting(store)


@pytest.fixture
def mounts(source: Counting) -> ReadOnlyMounts:
    return ReadOnlyMounts({"wiki": source}, notes={"wiki": NOTE})


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "notes.md").write_text("Welcome notes\n")
    return workspace


def test_read_sees_the_wiki_under_wiki(ws: Path, mounts: ReadOnlyMounts) -> None:
    out = read_file(ws, "wiki/Home.md", 1, 100, 30_000, mounts)
    assert out.content == "     1\t# Home\n     2\tWelcome to Acme."
    nested = read_file(ws, str(ws / "wiki" / "ops" / "Runbook.md"), 2, 1, 30_000, mounts)
    assert "make restart" in nested.content


def test_the_workspace_own_wiki_directory_is_hidden_by_the_mount(ws: Path,
                                                                 mounts: ReadOnlyMounts) -> None:
    (ws / "wiki").mkdir()
    (ws / "wiki" / "Home.md").write_text("an impostor\n")
    assert "Welcome to Acme" in read_file(ws, "wiki/Home.md", 1, 10, 30_000, mounts).content
    assert grep_files(ws, "impostor", mounts=mounts) == "No matches found for 'impostor'."


def test_glob_and_grep_list_the_wiki_beside_the_workspace(ws: Path,
                                                          mounts: ReadOnlyMounts) -> None:
    listed = glob_files(ws, "**/*.md", mounts=mounts).splitlines()
    assert sorted(listed) == ["notes.md", "wiki/Home.md", "wiki/ops/Runbook.md"]
    assert glob_files(ws, "*.md", "wiki", mounts=mounts) == "wiki/Home.md"
    assert glob_files(ws, "wiki/ops/*.md", mounts=mounts) == "wiki/ops/Runbook.md"
    assert grep_files(ws, "Welcome", mounts=mounts).splitlines() == [
        "notes.md:1:Welcome notes", "wiki/Home.md:2:Welcome to Acme."]
    assert grep_files(ws, "restart", "wiki", mounts=mounts) == (
        "wiki/ops/Runbook.md:2:Restart with `make restart`.")
    assert grep_files(ws, "Runbook", glob="ops/*.md", path="wiki",
                      output_mode="files_with_matches", mounts=mounts) == "wiki/ops/Runbook.md"


@pytest.mark.parametrize("path", ["wiki/Home.md", "wiki/new.md", "wiki", "./wiki/../wiki/x.md"])
def test_write_and_edit_refuse_the_wiki(ws: Path, mounts: ReadOnlyMounts, source: Counting,
                                        path: str) -> None:
    with pytest.raises(ToolError, match="mounted read-only: it is a read-only copy"):
        write_text(ws, path, "overwritten", mounts)
    with pytest.raises(ToolError, match="WikiWrite or WikiEdit"):
        edit_file(ws, path, "Welcome", "Goodbye", mounts=mounts)
    assert source.calls == 0  # a refused write builds no snapshot
    assert not (ws / "wiki").exists()


def test_a_link_to_wiki_inside_the_workspace_is_the_wiki_too(ws: Path,
                                                              mounts: ReadOnlyMounts) -> None:
    (ws / "wiki").mkdir()
    (ws / "w").symlink_to("wiki")
    with pytest.raises(ToolError, match="read-only"):
        write_text(ws, "w/Home.md", "sneaky", mounts)
    assert not (ws / "wiki" / "Home.md").exists()
    assert "Welcome to Acme" in read_file(ws, "w/Home.md", 1, 10, 30_000, mounts).content


def test_a_planted_wiki_link_does_not_lead_out(ws: Path, mounts: ReadOnlyMounts,
                                               outside: Path) -> None:
    (ws / "wiki").symlink_to(outside)
    # wiki/ is the mount, whatever the workspace holds there: the link is never followed.
    with pytest.raises(ToolError, match="File not found: wiki/secret.txt"):
        read_file(ws, "wiki/secret.txt", 1, 10, 30_000, mounts)
    assert grep_files(ws, "top secret", mounts=mounts) == "No matches found for 'top secret'."


def test_a_path_cannot_climb_out_of_the_mount(ws: Path, mounts: ReadOnlyMounts) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        locate(ws, "wiki/../../x", mounts)
    where = locate(ws, "wiki/ops/../Home.md", mounts)
    assert (where.mount, where.shown) == ("wiki", "wiki/Home.md")


def test_the_snapshot_is_built_once_and_only_when_needed(ws: Path, mounts: ReadOnlyMounts,
                                                         source: Counting) -> None:
    read_file(ws, "notes.md", 1, 10, 30_000, mounts)
    glob_files(ws, "*.md", mounts=mounts)  # the root's top level: the walk reaches the mount
    read_file(ws, "wiki/Home.md", 1, 10, 30_000, mounts)
    grep_files(ws, "Acme", mounts=mounts)
    assert source.calls == 1


def test_a_run_keeps_its_snapshot_and_the_next_run_sees_new_commits(
        ws: Path, store: WikiStore, mounts: ReadOnlyMounts) -> None:
    first = mounts.source("wiki")
    store.write("Home.md", "# Home\nChanged.\n", expected_blob=store.read("Home.md").blob,
                message="Change", author=ALICE)
    assert mounts.source("wiki") == first  # stable within a run
    assert "Welcome" in read_file(ws, "wiki/Home.md", 1, 10, 30_000, mounts).content
    fresh = ReadOnlyMounts({"wiki": store.snapshot})
    assert "Changed." in read_file(ws, "wiki/Home.md", 1, 10, 30_000, fresh).content
    assert store.snapshot() == fresh.source("wiki")  # one snapshot per commit, shared


def test_an_empty_wiki_shows_an_empty_directory(ws: Path, tmp_path: Path) -> None:
    empty = WikiStore(tmp_path / "empty.git", snapshots=tmp_path / "empty-snapshots")
    mounts = ReadOnlyMounts({"wiki": empty.snapshot})
    assert glob_files(ws, "wiki/**", mounts=mounts) == "No files found matching 'wiki/**'."
    with pytest.raises(ToolError, match="File not found"):
        read_file(ws, "wiki/Home.md", 1, 10, 30_000, mounts)


def test_the_sandbox_binds_each_mount_read_only_over_the_workspace(tmp_path: Path) -> None:
    argv = bwrap_argv("bwrap", tmp_path, ["true"], read_only={"wiki": Path("/snap/abc")})
    bind = argv.index("--bind")
    ro = argv.index("--ro-bind", bind)
    assert argv[ro:ro + 3] == ["--ro-bind", "/snap/abc", str(tmp_path / "wiki")]
    assert argv.index("--chdir") > ro


async def _bash(ws: Path, mounts: ReadOnlyMounts | None, command: str,
                sandbox: str = "auto") -> Any:
    async def emit(event: Any) -> None:
        pass
    return await BashTool().invoke(ToolContext("call_1", {"command": command}, ws, emit,
                                               env=ToolEnvironment(sandbox=sandbox),
                                               mounts=mounts))


@needs_sandbox
async def test_bash_reads_the_wiki_in_the_sandbox_and_cannot_write_it(
        ws: Path, mounts: ReadOnlyMounts, store: WikiStore) -> None:
    out = await _bash(ws, mounts, "cat wiki/Home.md && grep -rn restart wiki/")
    assert not out.is_error, out.content
    assert "Welcome to Acme." in out.content
    assert "wiki/ops/Runbook.md:2:Restart with `make restart`." in out.content
    denied = await _bash(ws, mounts, "echo evil > wiki/Home.md; touch wiki/new.md; "
                                     "rm -f wiki/ops/Runbook.md; ls wiki")
    assert "Read-only file system" in denied.content
    assert store.read("Home.md").content == "# Home\nWelcome to Acme.\n"
    snapshot = mounts.source("wiki")
    assert sorted(os.listdir(snapshot)) == ["Home.md", "ops"]
    assert (snapshot / "Home.md").read_text() == "# Home\nWelcome to Acme.\n"


@needs_sandbox
async def test_a_file_named_wiki_in_the_workspace_is_not_mounted_over(
        ws: Path, mounts: ReadOnlyMounts) -> None:
    (ws / "wiki").write_text("mine\n")
    out = await _bash(ws, mounts, "cat wiki")
    assert out.content.startswith("mine")
    assert "wiki/ is not mounted in this command" in out.content


async def test_unsandboxed_bash_gets_no_wiki_and_says_so(ws: Path,
                                                         mounts: ReadOnlyMounts) -> None:
    out = await _bash(ws, mounts, "ls wiki", sandbox="off")
    assert out.is_error
    assert "wiki/ is mounted only inside the sandbox" in out.content
    assert not (ws / "wiki").exists()
