"""Concurrent and crashing writers (issue 9 tests 1 and 2): nothing is lost silently, ``main``
is always a whole commit, and the repository stays valid."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from apps.engine.wiki import Author, WikiConflict, WikiStore
from apps.engine.wiki import store as store_module

from .conftest import ALICE, BOB, commits_on_main, git
from .test_store import outside_commit

LINES = 24
BASE = "".join(f"line {i}\n\n" for i in range(LINES))  # blank lines keep changes apart


def _changed(text: str, line: int, who: int) -> str:
    return text.replace(f"line {line}\n", f"line {line} by writer {who}\n", 1)


def _write(path: str, blob: str, who: int, line: int) -> str:
    """One writer: its own line (or a contested one), from the shared base."""
    store = WikiStore(Path(path))
    try:
        store.write("Page.md", _changed(BASE, line, who), expected_blob=blob,
                    message=f"writer {who}", author=Author(f"W{who}", f"w{who}@x"))
    except WikiConflict:
        return "conflict"
    return "written"


def _assert_sound(store: WikiStore) -> None:
    git(store, "fsck", "--strict", "--no-dangling")
    assert not list(store.path.rglob("*.lock"))


def test_twenty_writers_from_one_base_lose_nothing_silently(store) -> None:
    blob = store.write("Page.md", BASE, expected_blob=None, message="", author=ALICE).blob
    # Writers 0-15 each change their own line; 16-19 fight over line 0 with writer 0.
    jobs = [(who, who if who < 16 else 0) for who in range(20)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(10) as pool:
        in_processes = pool.starmap_async(
            _write, [(str(store.path), blob, who, line) for who, line in jobs[:10]])
        outcomes: dict[int, str] = {}
        threads = [threading.Thread(target=lambda w=w, ln=ln: outcomes.__setitem__(
            w, _write(str(store.path), blob, w, ln))) for w, ln in jobs[10:]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        outcomes.update(enumerate(in_processes.get(timeout=120)))
    text = store.read("Page.md").content
    written = [who for who, outcome in outcomes.items() if outcome == "written"]
    for who, line in jobs:
        assert (f"line {line} by writer {who}\n" in text) == (who in written), who
    contested = [who for who, line in jobs if line == 0]
    assert sum(who in written for who in contested) == 1  # one wins, four get a conflict
    assert len(written) == 16
    assert commits_on_main(store) == 1 + len(written)
    _assert_sound(store)


def test_a_ref_moved_between_planning_and_publishing_is_merged_not_overwritten(
        store, tmp_path, monkeypatch) -> None:
    blob = store.write("Page.md", BASE, expected_blob=None, message="", author=ALICE).blob
    real = store_module.move_main
    moved = []

    def someone_else_first(session, *, new, old):
        if not moved:
            moved.append(outside_commit(store, tmp_path / "index", "Page.md",
                                        _changed(BASE, 5, 99)))
        return real(session, new=new, old=old)

    monkeypatch.setattr(store_module, "move_main", someone_else_first)
    result = store.write("Page.md", _changed(BASE, 7, 1), expected_blob=blob, message="",
                         author=BOB)
    text = store.read("Page.md").content
    assert result.merged and "line 5 by writer 99" in text and "line 7 by writer 1" in text
    assert git(store, "rev-parse", "HEAD~1").strip() == moved[0]
    _assert_sound(store)


CRASH = """
import os, signal, sys
from pathlib import Path
from apps.engine.wiki import Author, WikiStore
from apps.engine.wiki import store as module

step = sys.argv[2]
real = getattr(module, step)

def crash(*args, **kwargs):
    if step != "move_main":
        real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)

setattr(module, step, crash)
WikiStore(Path(sys.argv[1])).write("Page.md", "crashed", expected_blob=sys.argv[3],
                                   message="", author=Author("K", "k@x"))
"""


@pytest.mark.parametrize("step", ["store_blobs", "make_commit", "move_main"])
def test_a_writer_killed_before_the_ref_moves_leaves_main_whole(store, step) -> None:
    first = store.write("Page.md", BASE, expected_blob=None, message="", author=ALICE)
    child = subprocess.run([sys.executable, "-c", CRASH, str(store.path), step, first.blob],
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == -9, child.stderr
    assert store.head() == first.commit
    _assert_sound(store)
    after = store.write("Page.md", "next", expected_blob=first.blob, message="", author=BOB)
    assert store.read("Page.md").content == "next" and after.commit != first.commit
