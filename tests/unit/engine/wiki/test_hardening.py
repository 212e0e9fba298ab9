"""What the repository or a request could make git do (issue 9 tests 3, 5 and 7): argument
injection is refused or taken as data, planted hooks and drivers never run, and a thousand
operations leave no process, descriptor or working-directory change behind."""

from __future__ import annotations

import os
import random
import stat
import subprocess
import threading
from pathlib import Path

import psutil
import pytest

from apps.engine.wiki import WikiConflict, WikiError, WikiInvalid, WikiNotFound, WikiStore

from .conftest import ALICE, BOB, git

ATTACKS = [
    "--output=Home.md", "--contents=.env", "-p", "--upload-pack=touch pwned",
    "--exec=touch pwned", "-c core.pager=touch pwned", "-ccore.pager=touch pwned",
    "--upl=touch pwned", "--no-index", "--ext-diff", "$(touch pwned)", "`touch pwned`",
    ":(glob)**", "HEAD --output=Home.md", "--output=Home.md.md",
]


@pytest.fixture
def attacked(store, tmp_path, monkeypatch) -> WikiStore:
    """A wiki with Home.md, and the process's working directory in an empty folder where a
    ``touch pwned`` or ``--output`` would land."""
    store.write("Home.md", "# Home\nkeep me\n", expected_blob=None, message="", author=ALICE)
    (tmp_path / ".env").write_text("SECRET=1")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    return store


def _nothing_written(store: WikiStore, root: Path) -> None:
    assert not [p for p in root.rglob("*") if p.name.startswith(("pwned", "Home.md"))]
    assert store.read("Home.md").content == "# Home\nkeep me\n"


@pytest.mark.parametrize("attack", ATTACKS)
def test_argument_injection_is_refused_or_data(attacked, attack, tmp_path) -> None:
    store = attacked
    blob = store.read("Home.md").blob
    as_revision_or_blob = [
        lambda: store.read("Home.md", attack),
        lambda: store.read_bytes("Home.md", attack),
        lambda: store.diff("Home.md", attack, "HEAD"),
        lambda: store.diff("Home.md", "HEAD", attack),
        lambda: store.restore("Home.md", attack, message="", author=ALICE),
        lambda: store.write("Home.md", "x", expected_blob=attack, message="", author=ALICE),
        lambda: store.delete("Home.md", expected_blob=attack, message="", author=ALICE),
    ]
    for call in as_revision_or_blob:
        with pytest.raises((WikiNotFound, WikiInvalid)):
            call()
    try:  # as a path: refused by the rules, or the literal name of a page
        created = store.write(attack, "x", expected_blob=None, message="", author=ALICE)
    except WikiInvalid:
        for call in (lambda: store.read(attack), lambda: store.history(attack),
                     lambda: store.rename("Home.md", attack, expected_blob=blob, message="",
                                          author=ALICE)):
            with pytest.raises(WikiInvalid):
                call()
    else:
        assert store.read(attack).content == "x"
        assert git(store, "ls-tree", "--name-only", created.commit, "--", attack).strip() \
            == attack
    assert store.search(attack) == []  # a query is text to find
    store.write("Note.md", f"mentions {attack}\n", expected_blob=None, author=BOB,
                message=attack)  # a message is text too
    assert [hit.path for hit in store.search(attack)] == ["Note.md"]
    assert store.history("Note.md")[0].commit.subject == attack
    _nothing_written(store, tmp_path)


def test_planted_hooks_fsmonitor_and_drivers_never_run(store, tmp_path) -> None:
    store.write("Home.md", "# Home\n", expected_blob=None, message="", author=ALICE)
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\n")
    script.chmod(0o755)
    hooks = store.path / "hooks"
    for name in ("pre-commit", "post-commit", "reference-transaction", "post-update",
                 "pre-receive", "post-checkout", "post-index-change", "fsmonitor-watchman"):
        (hooks / name).write_text(script.read_text())
        (hooks / name).chmod(stat.S_IRWXU)
    for key, value in [("core.fsmonitor", str(script)), ("core.hooksPath", str(hooks)),
                       ("diff.external", str(script)), ("filter.evil.clean", str(script)),
                       ("filter.evil.smudge", str(script)), ("diff.evil.textconv", str(script)),
                       ("core.pager", str(script)), ("core.sshCommand", str(script))]:
        git(store, "config", key, value)
    store.commit_files({"Home.md": "# Home\nchanged\n", "Guide.md": "# Guide\n"},
                       message="", author=ALICE)
    _plant_attributes(store, tmp_path)
    page = store.read("Home.md")
    store.write("Home.md", "# Home\nagain\n", expected_blob=page.blob, message="", author=BOB)
    store.edit("Home.md", "again", "edited", message="", author=BOB)
    store.diff("Home.md", page.commit, "HEAD")
    store.search("edited")
    store.history("Home.md")
    store.snapshot()
    assert not marker.exists(), marker.read_text()
    # The plants are live: git as the repository configures it runs them.
    subprocess.run(["git", f"--git-dir={store.path}", "update-ref", "refs/heads/probe", "HEAD"],
                   check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})
    assert "reference-transaction" in marker.read_text()


def _plant_attributes(store: WikiStore, tmp_path: Path) -> None:
    """A ``.gitattributes`` naming the evil drivers, committed with plain git (the store's
    path rules would refuse the name)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "attr-index"),
           "GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@x", "GIT_COMMITTER_NAME": "x",
           "GIT_COMMITTER_EMAIL": "x@x", "GIT_CONFIG_GLOBAL": "/dev/null"}
    def run(*args: str, stdin: str | None = None) -> str:
        return subprocess.run(["git", "-c", "core.hooksPath=/dev/null",
                               f"--git-dir={store.path}", *args], input=stdin, env=env,
                              capture_output=True, text=True, check=True).stdout.strip()

    head = store.head()
    blob = run("hash-object", "-w", "--stdin", stdin="* filter=evil diff=evil\n")
    run("read-tree", head)
    run("update-index", "--add", "--cacheinfo", f"100644,{blob},.gitattributes")
    commit = run("commit-tree", run("write-tree"), "-p", head, "-m", "attributes")
    run("update-ref", "refs/heads/main", commit, head)


def test_a_thousand_operations_leave_no_process_descriptor_or_cwd_change(store) -> None:
    me = psutil.Process()
    store.write("Home.md", "# Home\n", expected_blob=None, message="", author=ALICE)
    fds, children, cwd = me.num_fds(), len(me.children(recursive=True)), os.getcwd()
    seen_cwds: set[str] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen_cwds.add(os.getcwd())

    watcher = threading.Thread(target=watch)
    watcher.start()
    rng = random.Random(9)
    try:
        for number in range(1000):
            _one_operation(store, rng.randrange(8), number)
    finally:
        stop.set()
        watcher.join()
    assert seen_cwds == {cwd}
    assert len(me.children(recursive=True)) == children
    assert me.num_fds() == fds
    assert not [p for p in psutil.process_iter(["name", "cmdline"])
                if p.info["cmdline"] and "cat-file" in p.info["cmdline"]
                and str(store.path) in " ".join(p.info["cmdline"])]


def _one_operation(store: WikiStore, kind: int, number: int) -> None:
    path = f"p{number % 20}.md"
    try:
        if kind == 0:
            store.write(path, f"# {number}\n", expected_blob=None, message="", author=ALICE)
        elif kind == 1:
            page = store.read(path)
            store.write(path, page.content + "more\n", expected_blob=page.blob, message="",
                        author=BOB)
        elif kind == 2:
            store.read(path)
        elif kind == 3:
            store.search("more")
        elif kind == 4:
            store.list()
        elif kind == 5:
            store.history(path)
        elif kind == 6:
            store.edit(path, "more", "less", replace_all=True, message="", author=ALICE)
        else:
            page = store.read(path)
            store.diff(path, page.commit, "HEAD")
    except (WikiNotFound, WikiConflict, WikiInvalid):
        pass  # the page does not exist yet, or has no "more": an answer, not a leak
    except WikiError:
        raise
