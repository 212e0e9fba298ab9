"""A git command the read-only analyzer clears runs no program the workspace names.

Each test plants one setting that names a program (a marker-writing ``sh`` line) in a real
repository in the workspace, runs the cleared command through the Bash tool (unsandboxed, and
inside bubblewrap where it works) and checks that the marker is not there; then it runs the
same git in a command the analyzer does not clear (``... && touch approved``: what a person
approves) and checks that the marker appears, so the setting was live and the test is sound.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from apps.engine.tools.bash_readonly import is_read_only
from tests.unit.engine.tools.test_bash import MODES, bash, text_of

SETUP_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_ALLOW_PROTOCOL": "file",
}


def git(cwd: Path, *args: str) -> str:
    """The test's own git (the trusted setup side), in ``cwd``."""
    done = subprocess.run(["git", *args], cwd=cwd, env=SETUP_ENV, capture_output=True,
                          text=True, check=True)
    return done.stdout


def new_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    for name, text in files.items():
        (path / name).write_text(text)
    git(path, "add", "--all")
    git(path, "commit", "--quiet", "-m", "first")
    return path


def marker_program(marker: Path, then: str = "cat") -> str:
    """A shell line that leaves ``marker`` behind and then acts as ``then``."""
    return f"touch {marker}; {then}"


def stat_dirty(path: Path) -> None:
    """Same content, another mtime: git must read the file (through its filters) to compare."""
    stat = path.stat()
    os.utime(path, (stat.st_atime, stat.st_mtime + 5))


@pytest.fixture
def repo(workspace: Path) -> Path:
    """A repository at the workspace root whose files all use the driver ``evil``."""
    return new_repo(workspace, {"notes.txt": "alpha\n", ".gitattributes": "* diff=evil\n"})


async def assert_not_run(workspace: Path, mode: str, command: str, marker: Path, *,
                         succeeds: bool = True) -> None:
    """``command`` is cleared, leaves no ``marker`` and (when ``succeeds``) still works; the
    same command approved leaves the marker."""
    assert is_read_only(command), command
    out = await bash(workspace, command, sandbox=mode)
    assert not marker.exists(), f"the program ran: {text_of(out)}"
    assert out.is_error is not succeeds, text_of(out)
    approved = f"{command} && touch approved"
    assert not is_read_only(approved)
    out = await bash(workspace, approved, sandbox=mode)
    assert marker.exists(), f"the setting was not live, so the test proves nothing: {out}"


@pytest.mark.parametrize("mode", MODES)
async def test_core_fsmonitor_does_not_run(workspace: Path, repo: Path, mode: str) -> None:
    marker = workspace / "fsmonitor-ran"
    git(repo, "config", "core.fsmonitor", marker_program(marker, "exit 1"))
    await assert_not_run(workspace, mode, "git status --short", marker)


@pytest.mark.parametrize("mode", MODES)
async def test_a_hook_does_not_run_on_a_status(workspace: Path, repo: Path, mode: str) -> None:
    marker = workspace / "hook-ran"
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\n{marker_program(marker, 'true')}\n")
    hook.chmod(0o755)
    stat_dirty(repo / "notes.txt")  # the refresh has something to write into the index
    await assert_not_run(workspace, mode, "git status", marker)


@pytest.mark.parametrize("mode", MODES)
async def test_a_gitconfig_at_the_workspace_root_is_not_read(workspace: Path, repo: Path,
                                                             mode: str) -> None:
    marker = workspace / "home-config-ran"
    (workspace / ".gitconfig").write_text(
        f"[core]\n\tfsmonitor = {marker_program(marker, 'exit 1')}\n")
    command = "git status"
    assert is_read_only(command)
    out = await bash(workspace, command, sandbox=mode)
    assert not marker.exists(), f"the workspace's .gitconfig was read: {text_of(out)}"
    # Approved, with HOME set to the workspace on purpose: the file itself is live.
    await bash(workspace, f"HOME=$PWD {command}", sandbox=mode)
    assert marker.exists()


@pytest.mark.parametrize("mode", MODES)
async def test_home_is_never_the_workspace(workspace: Path, mode: str) -> None:
    for command in ("echo $HOME", "echo $HOME && touch approved"):
        home = text_of(await bash(workspace, command, sandbox=mode)).splitlines()[0]
        assert home and not Path(home).resolve().is_relative_to(workspace.resolve())


@pytest.mark.parametrize("mode", MODES)
async def test_diff_external_does_not_run(workspace: Path, repo: Path, mode: str) -> None:
    marker = workspace / "external-ran"
    git(repo, "config", "diff.external", marker_program(marker, "true"))
    (repo / "notes.txt").write_text("alpha\nbeta\n")
    await assert_not_run(workspace, mode, "git diff", marker)


@pytest.mark.parametrize("mode", MODES)
async def test_a_diff_driver_command_does_not_run(workspace: Path, repo: Path,
                                                  mode: str) -> None:
    marker = workspace / "driver-ran"
    git(repo, "config", "diff.evil.command", marker_program(marker, "true"))
    (repo / "notes.txt").write_text("alpha\nbeta\n")
    await assert_not_run(workspace, mode, "git diff HEAD", marker)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command", [
    "git diff", "git log -p", "git show", "git whatchanged -p", "git log -S beta",
    "git reflog -p", "git reflog show -p", "git blame notes.txt",
])
async def test_textconv_does_not_run(workspace: Path, repo: Path, mode: str,
                                     command: str) -> None:
    (repo / "notes.txt").write_text("alpha\nbeta\n")
    git(repo, "commit", "--quiet", "-am", "beta")
    (repo / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    marker = workspace / "textconv-ran"
    git(repo, "config", "diff.evil.textconv", marker_program(marker))
    await assert_not_run(workspace, mode, command, marker)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command", ["git stash list -p", "git stash list --patch --stat"])
async def test_textconv_does_not_run_on_a_stash(workspace: Path, repo: Path, mode: str,
                                                command: str) -> None:
    (repo / "notes.txt").write_text("alpha\nstashed\n")
    git(repo, "stash", "--quiet")
    marker = workspace / "textconv-ran"
    git(repo, "config", "diff.evil.textconv", marker_program(marker))
    await assert_not_run(workspace, mode, command, marker)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("key", ["clean", "process"])
@pytest.mark.parametrize("command", ["git status", "git diff", "git ls-files -m"])
async def test_a_filter_driver_does_not_run(workspace: Path, mode: str, key: str,
                                            command: str) -> None:
    repo = new_repo(workspace, {"notes.txt": "alpha\n", ".gitattributes": "* filter=evil\n"})
    marker = workspace / "filter-ran"
    git(repo, "config", f"filter.evil.{key}", marker_program(marker))
    git(repo, "config", "filter.evil.required", "true")
    stat_dirty(repo / "notes.txt")
    await assert_not_run(workspace, mode, command, marker)


def signed_commit(repo: Path) -> None:
    """Put a commit with a (bogus) OpenPGP signature on ``main``: enough for git to ask gpg."""
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    parent = git(repo, "rev-parse", "HEAD").strip()
    body = (f"tree {tree}\nparent {parent}\nauthor T <t@e> 1 +0000\ncommitter T <t@e> 1 +0000\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQ==\n -----END PGP SIGNATURE-----\n"
            "\nsigned\n")
    done = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo,
                          env=SETUP_ENV, input=body, capture_output=True, text=True, check=True)
    git(repo, "update-ref", "refs/heads/main", done.stdout.strip())


@pytest.mark.parametrize("mode", MODES)
async def test_the_repositorys_gpg_program_does_not_run(workspace: Path, repo: Path,
                                                        mode: str) -> None:
    marker = workspace / "gpg-ran"
    program = workspace / "fake-gpg"
    program.write_text(f"#!/bin/sh\n{marker_program(marker, 'exit 1')}\n")
    program.chmod(0o755)
    signed_commit(repo)
    git(repo, "config", "gpg.program", str(program))
    git(repo, "config", "log.showSignature", "true")
    await assert_not_run(workspace, mode, "git log -1", marker)


@pytest.fixture
def superproject(workspace: Path) -> Path:
    """The workspace as a repository with the submodule ``sub``, whose files use ``evil``."""
    upstream = new_repo(workspace / "upstream",
                        {"a.txt": "one\n", ".gitattributes": "* filter=evil diff=evil\n"})
    top = new_repo(workspace / "top", {"readme": "top\n"})
    git(top, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add",
        str(upstream), "sub")
    git(top, "commit", "--quiet", "-m", "sub")
    return top


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command", ["git status", "git diff"])
async def test_a_submodules_filter_does_not_run(workspace: Path, superproject: Path, mode: str,
                                                command: str) -> None:
    marker = workspace / "submodule-filter-ran"
    git(superproject / "sub", "config", "filter.evil.clean", marker_program(marker))
    stat_dirty(superproject / "sub" / "a.txt")
    await assert_not_run(workspace, mode, f"cd top && {command}", marker)


@pytest.mark.parametrize("mode", MODES)
async def test_a_submodules_diff_driver_does_not_run_through_diff_submodule(
        workspace: Path, superproject: Path, mode: str) -> None:
    sub = superproject / "sub"
    (sub / "a.txt").write_text("one\ntwo\n")
    git(sub, "commit", "--quiet", "-am", "two")
    git(superproject, "commit", "--quiet", "-am", "bump sub")
    marker = workspace / "submodule-diff-ran"
    git(sub, "config", "diff.evil.command", marker_program(marker, "true"))
    git(superproject, "config", "diff.submodule", "diff")
    await assert_not_run(workspace, mode, "cd top && git log -p -1", marker)


@pytest.mark.parametrize("mode", MODES)
async def test_a_lazy_fetch_does_not_run_the_remotes_upload_pack(workspace: Path,
                                                                 mode: str) -> None:
    upstream = new_repo(workspace / "upstream", {"a.txt": "one\n"})
    git(upstream, "config", "uploadpack.allowFilter", "true")
    git(workspace, "clone", "--quiet", "--filter=blob:none", "--no-checkout",
        f"file://{upstream}", "partial")
    marker = workspace / "upload-pack-ran"
    git(workspace / "partial", "config", "remote.origin.uploadpack",
        marker_program(marker, "git-upload-pack"))
    # Without a transport the missing blob cannot be fetched: the command fails, saying so.
    await assert_not_run(workspace, mode, "cd partial && git show HEAD:a.txt", marker,
                         succeeds=False)


@pytest.mark.parametrize("command", [
    "git diff --textconv", "git show --textconv HEAD",
    "git status -v", "git status -sv", "git log -p --submodule=diff",
    "git diff --ignore-submodules=none", "git status --ignore-submodules=untracked",
    "git describe --dirty", "git describe --broken",
])
def test_options_that_undo_the_guard_are_not_cleared(command: str) -> None:
    assert not is_read_only(command)


@pytest.mark.parametrize("mode", MODES)
async def test_guarded_git_still_answers(workspace: Path, repo: Path, mode: str) -> None:
    (repo / "notes.txt").write_text("alpha\nbeta\n")
    command = ("git -C . status --short && git diff --stat && git log --oneline | wc -l && "
               "git rev-parse --abbrev-ref HEAD")
    out = text_of(await bash(workspace, command, sandbox=mode))
    assert out.startswith(" M notes.txt\n notes.txt | 1 +\n 1 file changed, 1 insertion(+)\n"
                          "1\nmain\n[exit code 0]"), out
