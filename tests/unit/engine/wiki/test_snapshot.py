"""Snapshots share their files' content (a real repository, real hard links): each blob is
stored once under ``.blobs/`` and linked into every snapshot that has it; a build reads from
git only what is not stored yet, a batch at a time; pruning frees what nothing links."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pytest

from apps.engine.wiki import WikiStore, snapshot
from apps.engine.wiki.gitcmd import git_session
from apps.engine.wiki.snapshot import BLOBS, snapshot_at

from .conftest import ALICE

MIB = 1024 * 1024


def commit(store: WikiStore, files: dict[str, str | bytes]) -> str:
    return store.commit_files(files, message="c", author=ALICE).commit


def disk_bytes(root: Path) -> int:
    """What ``du`` counts under ``root``: each inode's blocks once, however many links."""
    seen: dict[int, int] = {}
    for current, _dirs, files in os.walk(root):
        for name in files:
            info = os.stat(os.path.join(current, name))
            seen[info.st_ino] = info.st_blocks * 512
    return sum(seen.values())


class RecordingSession:
    """A real git session that notes the blob ids each ``cat-file`` call is asked for."""

    def __init__(self, session) -> None:
        self.session = session
        self.asked: list[list[str]] = []

    def out(self, *args: str, stdin: bytes | None = None, env=None) -> bytes:
        if args[0] == "cat-file":
            self.asked.append((stdin or b"").decode().split())
        return self.session.out(*args, stdin=stdin, env=env)


def build(store: WikiStore, commit_id: str, recording: list[list[str]] | None = None) -> Path:
    with git_session(store.path, 10.0) as session:
        recorder = RecordingSession(session)
        path = snapshot_at(recorder, store.snapshots, commit_id)  # type: ignore[arg-type]
    if recording is not None:
        recording.extend(recorder.asked)
    return path


def test_two_commits_share_every_file_but_the_changed_one(store) -> None:
    files = {"A.md": "# A", "B.md": "# B", "ops/C.md": "# C", "_files/x.png": b"\x89PNG"}
    first = build(store, commit(store, files))
    second = build(store, commit(store, {"A.md": "# A2"}))
    for path in ("B.md", "ops/C.md", "_files/x.png"):
        assert (first / path).stat().st_ino == (second / path).stat().st_ino, path
    assert (first / "A.md").stat().st_ino != (second / "A.md").stat().st_ino
    assert ((first / "A.md").read_text(), (second / "A.md").read_text()) == ("# A", "# A2")


def test_five_snapshots_of_a_wiki_with_a_one_mib_attachment_cost_about_one_mib(store) -> None:
    commit(store, {"_files/big.pdf": os.urandom(MIB), "Home.md": "# Home 0"})
    for version in range(1, 6):
        build(store, commit(store, {"Home.md": f"# Home {version}"}))
    assert len([p for p in store.snapshots.iterdir() if not p.name.startswith(".")]) == 5
    assert MIB <= disk_bytes(store.snapshots) < MIB + 64 * 1024


def test_a_snapshot_is_complete_and_read_only(store) -> None:
    same = "the same text twice\n"
    files = {"Home.md": "# Home\n", "a/b/Deep.md": "deep", "One.md": same, "Two.md": same,
             "指南.md": "# 指南\n", "_files/empty.txt": b""}
    snap = build(store, commit(store, files))
    assert {str(p.relative_to(snap)) for p in snap.rglob("*") if p.is_file()} == set(files)
    for path, content in files.items():
        expected = content if isinstance(content, bytes) else content.encode()
        assert (snap / path).read_bytes() == expected
        assert stat_mode(snap / path) == 0o444
    assert {stat_mode(p) for p in [snap, *snap.rglob("*")] if p.is_dir()} == {0o555}
    stored = list((store.snapshots / BLOBS).iterdir())
    assert len(stored) == len(files) - 1 and {stat_mode(p) for p in stored} == {0o444}
    assert not [p for p in store.snapshots.iterdir() if p.name.startswith(".building-")]


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_a_build_reads_only_new_blobs_and_in_bounded_batches(store, monkeypatch) -> None:
    monkeypatch.setattr(snapshot, "BATCH_BYTES", 10)
    asked: list[list[str]] = []
    build(store, commit(store, {"A.md": "aaaaaaa", "B.md": "bbbbbbb", "C.md": "ccccccc"}),
          asked)
    assert [len(call) for call in asked] == [1, 1, 1]  # 7 + 7 bytes would be over 10
    asked.clear()
    changed = store.write("B.md", "bbbbbbb2", expected_blob=store.read("B.md").blob,
                          message="b", author=ALICE)
    build(store, changed.commit, asked)
    assert asked == [[changed.blob]]


def test_pruning_removes_old_snapshots_and_then_the_blobs_nothing_links(store) -> None:
    commit(store, {"Shared.md": "in every snapshot"})
    versions, snaps = [], []
    for version in range(1, 5):
        result = store.commit_files({"Page.md": f"version {version}"}, message="v",
                                    author=ALICE)
        versions.append(result.blob)
        snaps.append(build(store, result.commit))
    hours_ago = time.time() - 7200
    for age, snap in enumerate(reversed(snaps)):  # the newest old one is the least old
        os.utime(snap, (hours_ago - age, hours_ago - age))
    newest = store.commit_files({"Page.md": "version 5"}, message="v", author=ALICE)
    build(store, newest.commit)
    assert [s.exists() for s in snaps] == [False, False, True, True]  # 3 newest kept
    stored = set(os.listdir(store.snapshots / BLOBS))
    shared_blob = store.read("Shared.md").blob
    assert stored == {shared_blob, versions[2], versions[3], newest.blob}
    assert all((store.snapshots / BLOBS / blob).stat().st_nlink >= 2 for blob in stored)


def test_a_blob_gone_from_the_store_is_read_from_git_again(store) -> None:
    first = build(store, commit(store, {"A.md": "# A", "B.md": "# B"}))
    for stored in (store.snapshots / BLOBS).iterdir():
        stored.unlink()  # as a pruner racing this build would
    second = build(store, commit(store, {"A.md": "# A2"}))
    assert (second / "B.md").read_text() == "# B"
    assert (second / "B.md").stat().st_ino != (first / "B.md").stat().st_ino


@pytest.mark.parametrize("code", [errno.EXDEV, errno.EPERM, errno.EMLINK])
def test_where_hard_links_fail_the_files_are_copied(store, monkeypatch, code) -> None:
    def refuse(source, target) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "link", refuse)
    snap = build(store, commit(store, {"A.md": "# A", "Same.md": "# A", "B.md": "# B"}))
    assert [(snap / p).read_text() for p in ("A.md", "Same.md", "B.md")] == ["# A"] * 2 + ["# B"]
    assert stat_mode(snap / "A.md") == 0o444
