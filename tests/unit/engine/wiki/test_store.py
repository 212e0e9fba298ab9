"""The store's operations on a real repository: writes, merges, conflicts, edits, renames,
deletes, restores, history, diff, search, limits, authorship (issue 9 tests 8, 10, 11, 12)."""

from __future__ import annotations

import os
import subprocess

import pytest

from apps.engine.wiki import (
    Author,
    WikiConflict,
    WikiInvalid,
    WikiLimits,
    WikiNotFound,
    WikiStore,
    WikiTooLarge,
)

from .conftest import ALICE, BOB, commits_on_main, git

PAGE = "# Runbook\n\nstep one\nstep two\nstep three\n"


def write(store: WikiStore, path: str, text: str, blob: str | None = None, who=ALICE):
    return store.write(path, text, expected_blob=blob, message=f"write {path}", author=who)


def test_an_empty_wiki_has_nothing_and_no_repository(store) -> None:
    assert (store.head(), store.list(), store.usage(), store.snapshot()) == (None, [], 0, None)
    assert store.search("x") == []
    with pytest.raises(WikiNotFound):
        store.read("Home.md")
    assert not store.path.exists()


def test_a_page_is_read_back_with_its_blob_and_commit(store) -> None:
    result = write(store, "Runbook.md", PAGE)
    page = store.read("Runbook.md")
    assert (page.content, page.blob, page.commit) == (PAGE, result.blob, result.commit)
    assert git(store, "cat-file", "blob", f"{result.commit}:Runbook.md") == PAGE
    assert git(store, "rev-parse", "HEAD").strip() == result.commit  # HEAD is main


def test_create_only_of_an_existing_page_is_a_conflict_with_the_current_text(store) -> None:
    first = write(store, "Runbook.md", PAGE)
    with pytest.raises(WikiConflict) as caught:
        write(store, "Runbook.md", "other")
    assert (caught.value.current.content, caught.value.current.blob) == (PAGE, first.blob)
    assert caught.value.merged_text is None
    assert commits_on_main(store) == 1


def test_a_stale_write_to_another_part_of_the_page_merges(store) -> None:
    base = write(store, "Runbook.md", PAGE).blob
    write(store, "Runbook.md", PAGE.replace("step one", "step 1"), base, who=BOB)
    result = write(store, "Runbook.md", PAGE.replace("step three", "step 3"), base)
    assert result.merged
    assert store.read("Runbook.md").content == "# Runbook\n\nstep 1\nstep two\nstep 3\n"


def test_an_overlapping_stale_write_conflicts_and_commits_nothing(store) -> None:
    base = write(store, "Runbook.md", PAGE).blob
    theirs = write(store, "Runbook.md", PAGE.replace("step two", "step 2 (bob)"), base, BOB)
    with pytest.raises(WikiConflict) as caught:
        write(store, "Runbook.md", PAGE.replace("step two", "step 2 (alice)"), base)
    conflict = caught.value
    assert conflict.current.blob == theirs.blob
    assert "<<<<<<< yours\nstep 2 (alice)\n=======\nstep 2 (bob)\n>>>>>>> current" \
        in conflict.merged_text
    assert store.head() == theirs.commit


def test_a_write_against_a_page_deleted_meanwhile_conflicts(store) -> None:
    base = write(store, "Runbook.md", PAGE).blob
    store.delete("Runbook.md", expected_blob=base, message="", author=BOB)
    with pytest.raises(WikiConflict) as caught:
        write(store, "Runbook.md", "mine", base)
    assert caught.value.current is None


def test_an_unknown_expected_blob_is_a_conflict_not_a_blind_overwrite(store) -> None:
    write(store, "Runbook.md", PAGE)
    with pytest.raises(WikiConflict):
        write(store, "Runbook.md", "mine", "1" * 40)
    with pytest.raises(WikiInvalid):
        write(store, "Runbook.md", "mine", "--output=x")


def test_writing_the_same_text_makes_no_commit(store) -> None:
    first = write(store, "Runbook.md", PAGE)
    again = write(store, "Runbook.md", PAGE, first.blob)
    assert (again.commit, again.blob, commits_on_main(store)) == (first.commit, first.blob, 1)


def test_edit_applies_to_the_page_as_it_is_now(store) -> None:
    base = write(store, "Runbook.md", PAGE).blob
    write(store, "Runbook.md", PAGE.replace("step one", "step 1"), base, BOB)
    store.edit("Runbook.md", "step three", "step 3", message="", author=ALICE)
    assert store.read("Runbook.md").content == "# Runbook\n\nstep 1\nstep two\nstep 3\n"


@pytest.mark.parametrize(("old", "new", "error"), [
    ("missing", "x", "not in"), ("step", "x", "3 times"), ("", "x", "non-empty"),
    ("step one", "step one", "differs")])
def test_edit_refuses_text_that_is_absent_ambiguous_or_unchanged(store, old, new, error) -> None:
    write(store, "Runbook.md", PAGE)
    with pytest.raises(WikiInvalid, match=error):
        store.edit("Runbook.md", old, new, message="", author=ALICE)


def test_edit_replace_all(store) -> None:
    write(store, "Runbook.md", PAGE)
    store.edit("Runbook.md", "step", "stage", replace_all=True, message="", author=ALICE)
    assert store.read("Runbook.md").content.count("stage") == 3


def test_rename_keeps_history_and_names_the_old_path(store) -> None:
    blob = write(store, "Runbook.md", PAGE).blob
    blob = write(store, "Runbook.md", PAGE + "step four\n", blob).blob
    renamed = store.rename("Runbook.md", "ops/Runbook.md", expected_blob=blob, message="",
                           author=BOB)
    assert renamed.blob == blob
    history = store.history("ops/Runbook.md")
    assert [entry.path for entry in history] == ["ops/Runbook.md", "Runbook.md", "Runbook.md"]
    assert history[0].commit.trailers["Confab-Renamed-From"] == "Runbook.md"
    with pytest.raises(WikiNotFound):
        store.read("Runbook.md")


def test_rename_onto_an_existing_page_or_a_stale_blob_conflicts(store) -> None:
    blob = write(store, "A.md", "a").blob
    write(store, "B.md", "b")
    with pytest.raises(WikiConflict):
        store.rename("A.md", "B.md", expected_blob=blob, message="", author=ALICE)
    with pytest.raises(WikiConflict):
        store.rename("A.md", "C.md", expected_blob="2" * 40, message="", author=ALICE)
    with pytest.raises(WikiInvalid):
        store.rename("A.md", "_files/a.png", expected_blob=blob, message="", author=ALICE)


def test_a_page_where_a_folder_is_is_refused_and_the_folder_kept(store) -> None:
    write(store, "Ops.md/Runbook.md", PAGE)
    write(store, "Ops.md/deep/Notes.md", PAGE)
    other = write(store, "Forge.md", "f").blob
    with pytest.raises(WikiInvalid, match="clashes with Ops.md: a folder has that name"):
        write(store, "Ops.md", "gone\n")  # its commit's tree would have dropped the folder
    with pytest.raises(WikiInvalid, match="clashes with Ops.md"):
        store.rename("Forge.md", "Ops.md", expected_blob=other, message="", author=ALICE)
    assert store.read("Ops.md/Runbook.md").content == PAGE
    assert store.read("Ops.md/deep/Notes.md").content == PAGE
    assert sorted(page.path for page in store.list()) == [
        "Forge.md", "Ops.md/Runbook.md", "Ops.md/deep/Notes.md"]


def test_delete_then_restore_brings_the_page_back_in_a_new_commit(store) -> None:
    first = write(store, "Runbook.md", PAGE)
    deleted = store.delete("Runbook.md", expected_blob=first.blob, message="", author=ALICE)
    assert deleted.blob is None and store.list() == []
    restored = store.restore("Runbook.md", first.commit, message="", author=BOB)
    assert store.read("Runbook.md").content == PAGE
    assert restored.blob == first.blob and commits_on_main(store) == 3
    same = store.restore("Runbook.md", first.commit, message="", author=BOB)
    assert same.commit == restored.commit  # already so: no new commit
    with pytest.raises(WikiNotFound):
        store.restore("Other.md", first.commit, message="", author=BOB)


def test_an_old_revision_reads_as_it_was(store) -> None:
    first = write(store, "Runbook.md", PAGE)
    write(store, "Runbook.md", "new", first.blob)
    assert store.read("Runbook.md", first.commit).content == PAGE
    with pytest.raises(WikiNotFound):
        store.read("Runbook.md", "f" * 40)
    with pytest.raises(WikiNotFound):
        store.read("Runbook.md", first.blob)  # a blob id is no revision


def test_diff_between_two_revisions(store) -> None:
    first = write(store, "Runbook.md", PAGE)
    second = write(store, "Runbook.md", PAGE.replace("two", "2"), first.blob)
    diff = store.diff("Runbook.md", first.commit, second.commit)
    assert "-step two\n+step 2\n" in diff
    assert store.diff("Runbook.md", second.commit, "HEAD") == ""


def test_list_gives_titles_and_who_changed_each_file_last(store) -> None:
    write(store, "A.md", "# Alpha page\ntext")
    write(store, "b/B.md", "no heading", who=BOB)
    store.write("_files/logo.png", b"\x89PNG\r\n", expected_blob=None, message="", author=ALICE)
    listing = {info.path: (info.title, info.updated_by) for info in store.list()}
    assert listing == {"A.md": ("Alpha page", "Alice Smith"), "b/B.md": ("B", "Bob Jones"),
                       "_files/logo.png": ("logo.png", "Alice Smith")}
    assert [info.path for info in store.list("b/")] == ["b/B.md"]


def test_list_follows_commits_made_by_another_process(store, tmp_path) -> None:
    write(store, "A.md", "# A")
    assert [i.title for i in store.list()] == ["A"]
    outside_commit(store, tmp_path / "index", "B.md", "# Outside\n")
    listing = {i.path: (i.title, i.updated_by) for i in WikiStore(store.path).list()}
    assert listing == {"A.md": ("A", "Alice Smith"), "B.md": ("Outside", "Operator")}


def outside_commit(store: WikiStore, index, path: str, text: str) -> str:
    """A commit made with plain git, behind the store's back (another worker, an operator)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(index), "GIT_AUTHOR_NAME": "Operator",
           "GIT_AUTHOR_EMAIL": "op@x", "GIT_COMMITTER_NAME": "op", "GIT_COMMITTER_EMAIL": "op@x"}

    def run(*args: str, stdin: str | None = None) -> str:
        return subprocess.run(["git", f"--git-dir={store.path}", *args], input=stdin, env=env,
                              capture_output=True, text=True, check=True).stdout.strip()

    head = store.head()
    blob = run("hash-object", "-w", "--stdin", stdin=text)
    run("read-tree", head)
    run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    commit = run("commit-tree", run("write-tree"), "-p", head, "-m", "outside")
    run("update-ref", "refs/heads/main", commit, head)
    return commit


@pytest.fixture(params=["in memory", "by git grep"])
def searched(request, tmp_path) -> WikiStore:
    """A store searched from the kept texts, and one whose limit sends search to git grep."""
    memory = WikiLimits().search_memory_bytes if request.param == "in memory" else 0
    return WikiStore(tmp_path / "8.git", limits=WikiLimits(search_memory_bytes=memory))


def test_search_is_literal_case_insensitive_and_finds_cjk(searched) -> None:
    store = searched
    write(store, "A.md", "# Deploy\nRun --output=x first\nthen (a+b)*\n")
    write(store, "指南.md", "# 指南\n部署步骤在这里\n")
    store.write("_files/notes.txt", b"Deploy secret", expected_blob=None, message="",
                author=ALICE)
    assert [(h.path, h.line) for h in store.search("deploy")] == [("A.md", 1)]
    assert [h.snippet for h in store.search("--output=x")] == ["Run --output=x first"]
    assert [h.line for h in store.search("(a+b)*")] == [3]
    assert [(h.path, h.snippet) for h in store.search("步骤")] == [("指南.md", "部署步骤在这里")]
    assert store.search("-p") == []


def test_search_is_capped(searched) -> None:
    store = searched
    store.commit_files({f"p{i}.md": "needle\n" * 3 for i in range(10)}, message="seed",
                       author=ALICE)
    assert len(store.search("needle", limit=5)) == 5
    assert len(store.search("needle")) == 30


def test_search_sees_pages_changed_outside_the_store(searched, tmp_path) -> None:
    store = searched
    write(store, "A.md", "# A\nold words\n")
    assert [h.path for h in store.search("old words")] == ["A.md"]
    outside_commit(store, tmp_path / "index", "B.md", "# B\nnew words\n")
    assert [h.path for h in store.search("new words")] == ["B.md"]
    page = store.read("A.md")
    write(store, "A.md", "# A\nrewritten\n", page.blob)
    assert store.search("old words") == []


def test_search_in_memory_folds_case_by_unicode_rules(store) -> None:
    write(store, "Street.md", "# Street\nGroße Straße 1\nΣΊΣΥΦΟΣ\n")
    assert [h.line for h in store.search("STRASSE")] == [2]
    assert [h.line for h in store.search("σίσυφος")] == [3]


@pytest.mark.parametrize("query", ["", "   ", "a\nb", "x" * 201])
def test_search_refuses_queries_that_are_not_one_short_line(store, query) -> None:
    with pytest.raises(WikiInvalid):
        store.search(query)


def test_limits_are_refused_with_no_commit(tmp_path) -> None:
    store = WikiStore(tmp_path / "1.git", limits=WikiLimits(
        page_bytes=100, attachment_bytes=50, quota_bytes=300, files_per_commit=3))
    write(store, "A.md", "a")
    with pytest.raises(WikiTooLarge):
        write(store, "B.md", "x" * 101)
    with pytest.raises(WikiTooLarge):
        store.write("_files/a.png", b"x" * 51, expected_blob=None, message="", author=ALICE)
    with pytest.raises(WikiTooLarge):
        store.commit_files({f"{i}.md": "x" for i in range(4)}, message="", author=ALICE)
    store.commit_files({f"{i}.md": "x" * 99 for i in range(3)}, message="", author=ALICE)
    with pytest.raises(WikiTooLarge, match="quota"):
        write(store, "Z.md", "x" * 20)
    with pytest.raises(WikiInvalid, match="NUL"):
        write(store, "N.md", "a\0b")
    with pytest.raises(WikiInvalid):
        store.write("B.md", b"bytes", expected_blob=None, message="", author=ALICE)
    assert commits_on_main(store) == 2


def test_writing_what_a_page_already_says_makes_no_commit(store) -> None:
    first = write(store, "A.md", PAGE)
    again = write(store, "A.md", PAGE, first.blob)
    assert (again.changed, again.commit, again.blob) == (False, first.commit, first.blob)
    assert commits_on_main(store) == 1


def test_a_wiki_over_its_quota_can_still_shrink(tmp_path) -> None:
    big = WikiStore(tmp_path / "q.git")
    pages = big.commit_files({"A.md": "a" * 200, "B.md": "b" * 200}, message="", author=ALICE)
    store = WikiStore(big.path, limits=WikiLimits(quota_bytes=300))  # the quota was lowered
    with pytest.raises(WikiTooLarge, match="quota of 300 bytes"):
        write(store, "C.md", "c")
    a = store.read("A.md")
    assert write(store, "A.md", "short", a.blob).changed  # smaller: allowed
    renamed = store.rename("B.md", "Bee.md", expected_blob=store.read("B.md").blob,
                           message="", author=ALICE)
    store.delete("Bee.md", expected_blob=renamed.blob, message="", author=ALICE)
    assert store.usage() == 5 and pages.changed


def test_a_stale_save_that_theirs_already_holds_makes_no_commit(store) -> None:
    base = write(store, "Notes.md", "one\ntwo\n")
    theirs = write(store, "Notes.md", "one\ntwo\nthree\n", base.blob)
    again = write(store, "Notes.md", "one\ntwo\n", base.blob)  # my unchanged text, stale
    assert (again.changed, again.commit) == (False, theirs.commit)
    assert commits_on_main(store) == 2


def test_an_expected_blob_that_is_no_text_of_the_page_is_a_conflict(store) -> None:
    zipped = store.write("_files/a.zip", b"PK\x03\x04\0\0binary", expected_blob=None,
                         message="", author=ALICE)
    page = write(store, "Notes.md", "one\n")
    write(store, "Notes.md", "one\ntwo\n", page.blob)
    with pytest.raises(WikiConflict) as conflict:
        write(store, "Notes.md", "mine\n", zipped.blob)
    assert conflict.value.current.content == "one\ntwo\n"


def test_an_expected_blob_for_a_page_that_never_existed_is_not_found(store) -> None:
    other = write(store, "Other.md", "other\n")
    with pytest.raises(WikiNotFound):
        write(store, "Never.md", "text\n", "0" * 40)
    gone = write(store, "Gone.md", "gone\n")
    store.delete("Gone.md", expected_blob=gone.blob, message="", author=ALICE)
    with pytest.raises(WikiConflict, match="deleted meanwhile"):
        write(store, "Gone.md", "back\n", gone.blob)
    assert other.changed


def test_commit_files_skips_what_is_unchanged(store) -> None:
    first = store.commit_files({"A.md": "a", "B.md": "b"}, message="seed", author=ALICE)
    again = store.commit_files({"A.md": "a", "B.md": "b"}, message="seed", author=ALICE)
    assert (again.changed, again.commit, first.changed) == (False, first.commit, True)
    assert commits_on_main(store) == 1 and first is not None


def test_authorship_is_the_given_author_and_cannot_be_forged(store) -> None:
    forger = Author("Eve\nCommitter: root <root@x>", "eve@x>\nx", {"Confab-User": "5\nX: y"})
    store.write("A.md", "a", expected_blob=None, author=forger,
                message="Hi\n\nConfab-User: 1\nConfab-Run: 9")
    raw = git(store, "cat-file", "commit", "HEAD")
    headers, _, message = raw.partition("\n\n")
    assert "author Eve Committer: root root@x " in headers
    assert "committer confab <wiki@confab.invalid>" in headers
    assert headers.count("\n") == 2  # tree, author, committer: nothing injected
    assert message == "Hi Confab-User: 1 Confab-Run: 9\n\nConfab-User: 5 X: y\n"
    entry = store.history("A.md")[0].commit
    assert entry.trailers == {"Confab-User": "5 X: y"}
    assert store.list()[0].updated_by == "Eve Committer: root root@x"


def test_history_of_a_page_nobody_wrote_is_not_found(store) -> None:
    write(store, "A.md", "a")
    with pytest.raises(WikiNotFound):
        store.history("B.md")


def test_snapshot_is_read_only_shared_per_commit_and_follows_main(store) -> None:
    first = write(store, "A.md", "# A")
    store.write("_files/x.png", b"\x89PNG", expected_blob=None, message="", author=ALICE)
    snap = store.snapshot()
    assert snap == store.snapshot()
    assert (snap / "A.md").read_text() == "# A" and (snap / "_files/x.png").read_bytes()
    with pytest.raises(PermissionError):
        (snap / "new.md").write_text("x") if os.geteuid() else _as_nobody(snap)
    write(store, "A.md", "# A2", first.blob)
    assert (store.snapshot() / "A.md").read_text() == "# A2"
    assert (snap / "A.md").read_text() == "# A"  # an older snapshot stays for who has it


def _as_nobody(snap) -> None:
    """Root ignores permission bits: check them instead of trying."""
    assert not any(mode & 0o222 for mode in (
        p.stat().st_mode for p in [snap, *snap.rglob("*")]))
    raise PermissionError
