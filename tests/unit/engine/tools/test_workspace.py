"""Workspace confinement: path resolution, link-safe opening, the tree walk, stoppable threads."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from apps.engine.errors import ToolError
from apps.engine.tools.workspace import (
    display_path,
    open_in_workspace,
    resolve_path,
    run_stoppable,
    walk_files,
)


def test_relative_path_resolves_inside_the_workspace(workspace: Path) -> None:
    assert resolve_path(workspace, "src/app.py") == workspace.resolve() / "src" / "app.py"


def test_dot_names_the_workspace_root(workspace: Path) -> None:
    assert resolve_path(workspace, ".") == workspace.resolve()


def test_absolute_path_inside_the_workspace_is_accepted(workspace: Path) -> None:
    assert resolve_path(workspace, str(workspace / "a.txt")) == workspace.resolve() / "a.txt"


def test_absolute_path_through_the_workspace_spelling_or_its_real_path(tmp_path: Path) -> None:
    real = tmp_path / "real-ws"
    real.mkdir()
    spelled = tmp_path / "ws-link"
    spelled.symlink_to(real)
    assert resolve_path(spelled, f"{spelled}/a.txt") == real / "a.txt"
    assert resolve_path(spelled, f"{real}/a.txt") == real / "a.txt"


def test_dot_dot_that_stays_inside_is_accepted(workspace: Path) -> None:
    assert resolve_path(workspace, "a/../b.txt") == workspace.resolve() / "b.txt"


@pytest.mark.parametrize("path", ["../x.txt", "..", "a/../../x.txt", "./../outside/secret.txt"])
def test_dot_dot_that_escapes_is_refused(workspace: Path, path: str) -> None:
    with pytest.raises(ToolError, match="is outside the workspace"):
        resolve_path(workspace, path)


def test_absolute_path_outside_is_refused(workspace: Path, outside: Path) -> None:
    with pytest.raises(ToolError, match="is outside the workspace"):
        resolve_path(workspace, str(outside / "secret.txt"))
    with pytest.raises(ToolError, match="is outside the workspace"):
        resolve_path(workspace, "/etc/passwd")


def test_absolute_path_escaping_with_dot_dot_is_refused(workspace: Path) -> None:
    with pytest.raises(ToolError, match="is outside the workspace"):
        resolve_path(workspace, f"{workspace}/../outside/secret.txt")


def test_a_sibling_whose_name_extends_the_workspace_name_is_outside(tmp_path: Path,
                                                                    workspace: Path) -> None:
    (tmp_path / "ws-other").mkdir()
    with pytest.raises(ToolError, match="is outside the workspace"):
        resolve_path(workspace, f"{workspace}-other/x.txt")


def test_link_inside_to_inside_is_followed(workspace: Path) -> None:
    (workspace / "real.txt").write_text("x")
    (workspace / "alias.txt").symlink_to("real.txt")
    assert resolve_path(workspace, "alias.txt") == workspace.resolve() / "real.txt"


def test_file_link_to_outside_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "leak.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="leads outside the workspace through a symbolic link"):
        resolve_path(workspace, "leak.txt")


def test_directory_link_to_outside_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "out").symlink_to(outside)
    with pytest.raises(ToolError, match="through a symbolic link"):
        resolve_path(workspace, "out/secret.txt")
    with pytest.raises(ToolError, match="through a symbolic link"):
        resolve_path(workspace, "out/new-file.txt")


def test_dangling_link_to_outside_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "trap.txt").symlink_to(outside / "does-not-exist-yet.txt")
    with pytest.raises(ToolError, match="through a symbolic link"):
        resolve_path(workspace, "trap.txt")


@pytest.mark.parametrize(("path", "message"), [
    ("", "The path is empty"),
    ("   ", "The path is empty"),
    ("~/notes.txt", "home directories are outside the workspace"),
    ("a\x00b", "NUL"),
])
def test_unusable_spellings_are_refused(workspace: Path, path: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        resolve_path(workspace, path)


def test_missing_workspace_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="workspace directory is missing"):
        resolve_path(tmp_path / "gone", "a.txt")


def test_display_path_is_relative_to_the_workspace(workspace: Path) -> None:
    assert display_path(workspace, workspace.resolve() / "src" / "a.py") == "src/a.py"
    assert display_path(workspace, workspace / "b.txt") == "b.txt"
    assert display_path(workspace, workspace.resolve()) == "."


def test_open_refuses_a_file_swapped_for_a_link_after_the_check(workspace: Path,
                                                                 outside: Path) -> None:
    (workspace / "f.txt").write_text("mine")
    checked = resolve_path(workspace, "f.txt")
    (workspace / "f.txt").unlink()
    (workspace / "f.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="became a symbolic link"):
        open_in_workspace(workspace, checked)
    with pytest.raises(ToolError, match="became a symbolic link"):
        open_in_workspace(workspace, checked, write=True)
    assert (outside / "secret.txt").read_text() == "top secret\n"


def test_open_refuses_a_directory_swapped_for_a_link_after_the_check(workspace: Path,
                                                                      outside: Path) -> None:
    (workspace / "d").mkdir()
    checked = resolve_path(workspace, "d/secret.txt")
    (workspace / "d").rmdir()
    (workspace / "d").symlink_to(outside)
    with pytest.raises(ToolError, match="became a symbolic link"):
        open_in_workspace(workspace, checked, write=True, create_parents=True)
    assert (outside / "secret.txt").read_text() == "top secret\n"


def test_open_refuses_a_fifo_without_blocking(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        open_in_workspace(workspace, resolve_path(workspace, "pipe"))


def test_open_reports_a_directory(workspace: Path) -> None:
    (workspace / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        open_in_workspace(workspace, resolve_path(workspace, "d"))
    with pytest.raises(IsADirectoryError):
        open_in_workspace(workspace, resolve_path(workspace, "."))


def test_open_for_writing_creates_parents_and_truncates(workspace: Path) -> None:
    target = resolve_path(workspace, "a/b/c.txt")
    with open_in_workspace(workspace, target, write=True, create_parents=True) as f:
        f.write(b"long original text")
    with open_in_workspace(workspace, target, write=True) as f:
        f.write(b"short")
    assert target.read_bytes() == b"short"


def _names(workspace: Path, start: Path | None = None) -> list[str]:
    root = workspace.resolve()
    return [p.relative_to(root).as_posix() for p, _ in walk_files(root, start or root)]


def test_walk_lists_files_in_name_order_and_skips_internals(workspace: Path) -> None:
    for name in ["b.txt", "a/z.txt", "a/b/y.txt", ".git/HEAD", ".confab/results/x.txt",
                 "sub/.git/config", ".hidden"]:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("x")
    assert _names(workspace) == [".hidden", "a/b/y.txt", "a/z.txt", "b.txt"]


def test_walk_does_not_follow_directory_links(workspace: Path, outside: Path) -> None:
    (workspace / "inner").mkdir()
    (workspace / "inner" / "f.txt").write_text("x")
    (workspace / "out").symlink_to(outside)
    (workspace / "loop").symlink_to(workspace)
    assert _names(workspace) == ["inner/f.txt"]


def test_walk_lists_file_links_only_when_they_stay_inside(workspace: Path,
                                                          outside: Path) -> None:
    (workspace / "real.txt").write_text("x")
    (workspace / "alias.txt").symlink_to("real.txt")
    (workspace / "leak.txt").symlink_to(outside / "secret.txt")
    (workspace / "dangling.txt").symlink_to("nowhere.txt")
    root = workspace.resolve()
    found = {p.name: real for p, real in walk_files(root, root)}
    assert found == {"alias.txt": root / "real.txt", "real.txt": root / "real.txt"}


def test_walk_stops_once_asked(workspace: Path) -> None:
    (workspace / "a.txt").write_text("x")
    stop = threading.Event()
    stop.set()
    assert list(walk_files(workspace.resolve(), workspace.resolve(), stop)) == []


async def test_cancelling_run_stoppable_sets_the_stop_event() -> None:
    started, finished = threading.Event(), threading.Event()
    seen: list[bool] = []

    def work(stop: threading.Event) -> None:
        started.set()
        seen.append(stop.wait(timeout=30))
        finished.set()

    task = asyncio.create_task(run_stoppable(work))
    assert await asyncio.to_thread(started.wait, 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(finished.wait, 30)
    assert seen == [True]


async def test_run_stoppable_returns_the_result() -> None:
    assert await run_stoppable(lambda stop: stop.is_set()) is False
