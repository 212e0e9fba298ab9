"""Trees rebuilt along the changed paths equal the ones git's own index would write."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from apps.engine.wiki import WikiDamaged, WikiInvalid
from apps.engine.wiki.catalog import FileChange
from apps.engine.wiki.gitcmd import git_session, init_bare
from apps.engine.wiki.trees import write_tree
from apps.engine.wiki.writes import store_blobs

NAMES = ["a.md", "a", "a-b.md", "a/b.md", "a/b/c.md", "a.b/x.md", "A.md", "é.md", "指南.md",
         "z/deep/er/page.md", "_files/x.png", "Runbooks/Deploy.md", "Runbooks.md"]


def plain(git_dir: Path, *args: str, stdin: bytes | None = None, index: Path | None = None):
    env = {**os.environ, "GIT_DIR": str(git_dir), "GIT_AUTHOR_NAME": "T",
           "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@x"}
    if index:
        env["GIT_INDEX_FILE"] = str(index)
    return subprocess.run(["git", *args], input=stdin, env=env, capture_output=True,
                          check=True).stdout.decode().strip()


def by_index(git_dir: Path, head: str | None, changes, blobs, index: Path) -> str:
    """The oracle: the same changes through an index, as ``git commit`` would."""
    plain(git_dir, "read-tree", head or "--empty", index=index)
    lines = "".join(f"100644 {blobs[c.path]}\t{c.path}\0" if c.data is not None
                    else f"0 {'0' * 40}\t{c.path}\0" for c in changes)
    plain(git_dir, "update-index", "-z", "--index-info", stdin=lines.encode(), index=index)
    return plain(git_dir, "write-tree", index=index)


def commit(git_dir: Path, tree: str, head: str | None) -> str:
    parents = ["-p", head] if head else []
    return plain(git_dir, "commit-tree", tree, *parents, stdin=b"step\n")


def valid_changes(rng: random.Random, present: set[str]) -> list[FileChange]:
    """Random adds, rewrites and removals that never put a file where a folder is."""
    changes, taken = [], set(present)
    for name in rng.sample(NAMES, rng.randint(1, 5)):
        if name in present and rng.random() < 0.5:
            changes.append(FileChange(name, None))
            taken.discard(name)
            continue
        parts = name.split("/")
        folders = {"/".join(parts[:d]) for d in range(1, len(parts))}
        if folders & taken or any(p.startswith(name + "/") for p in taken):
            continue
        changes.append(FileChange(name, f"{name} {rng.random()}\n".encode()))
        taken.add(name)
    return changes


def test_random_change_sequences_give_git_s_own_trees(tmp_path) -> None:
    git_dir = tmp_path / "w.git"
    init_bare(git_dir, 10)
    rng, head, present = random.Random(7), None, set()
    with git_session(git_dir, 10) as session:
        for _ in range(40):
            changes = valid_changes(rng, present)
            blobs = store_blobs(session, changes)
            ours = write_tree(session, head, changes, blobs)
            assert ours == by_index(git_dir, head, changes, blobs, tmp_path / "index")
            head = commit(git_dir, ours, head)
            for change in changes:
                (present.add if change.data is not None else present.discard)(change.path)
    assert plain(git_dir, "fsck", "--strict", "--no-dangling") == ""


def test_an_emptied_folder_disappears_and_other_modes_are_kept(tmp_path) -> None:
    git_dir = tmp_path / "w.git"
    init_bare(git_dir, 10)
    blob = plain(git_dir, "hash-object", "-w", "--stdin", stdin=b"#!/bin/sh\n")
    tree = plain(git_dir, "mktree", stdin=f"100755 blob {blob}\ttool.sh\n".encode())
    with git_session(git_dir, 10) as session:
        head = commit(git_dir, tree, None)
        added = [FileChange("Team/Only.md", b"# Only\n")]
        head = commit(git_dir, write_tree(session, head, added, store_blobs(session, added)),
                      head)
        emptied = write_tree(session, head, [FileChange("Team/Only.md", None)], {})
    assert plain(git_dir, "ls-tree", "-r", emptied) == f"100755 blob {blob}\ttool.sh"


def test_a_path_through_a_file_is_refused(tmp_path) -> None:
    git_dir = tmp_path / "w.git"
    init_bare(git_dir, 10)
    with git_session(git_dir, 10) as session:
        first = [FileChange("Notes", b"a file\n")]
        head = commit(git_dir, write_tree(session, None, first, store_blobs(session, first)),
                      None)
        inner = [FileChange("Notes/x.md", b"x\n")]
        with pytest.raises(WikiInvalid):
            write_tree(session, head, inner, store_blobs(session, inner))


def test_an_unreadable_folder_is_damage_never_an_empty_one(tmp_path) -> None:
    git_dir = tmp_path / "w.git"
    init_bare(git_dir, 10)
    with git_session(git_dir, 10) as session:
        first = [FileChange("Team/A.md", b"a\n"), FileChange("Team/B.md", b"b\n")]
        head = commit(git_dir, write_tree(session, None, first, store_blobs(session, first)),
                      None)
        folder = plain(git_dir, "rev-parse", f"{head}:Team")
        loose = git_dir / "objects" / folder[:2] / folder[2:]
        loose.chmod(0o644)
        loose.write_bytes(b"garbage")
        more = [FileChange("Team/C.md", b"c\n")]
        with pytest.raises(WikiDamaged):
            write_tree(session, head, more, store_blobs(session, more))
