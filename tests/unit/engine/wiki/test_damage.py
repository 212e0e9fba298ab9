"""A repository an operator changed, damaged or lost: the store notices and says so, it never
answers a stale catalog, shows damage as a missing page, or starts a fresh wiki over a lost one."""

from __future__ import annotations

import logging
import shutil

import pytest

from apps.engine.wiki import WikiDamaged, WikiNotFound, WikiStore

from .conftest import ALICE, git


class Record:
    """The host's memory that the repository was created (a database row in confab)."""

    def __init__(self) -> None:
        self.created = False

    def known(self) -> bool:
        return self.created

    def record(self) -> None:
        self.created = True


def write(store: WikiStore, path: str, text: str, blob: str | None = None):
    return store.write(path, text, expected_blob=blob, message=f"write {path}", author=ALICE)


def test_main_moved_back_by_an_operator_is_listed_as_it_is_now(store) -> None:
    first = write(store, "A.md", "# A\n")
    write(store, "A.md", "# A, later\n", first.blob)
    write(store, "B.md", "# B\n")
    assert [p.path for p in store.list()] == ["A.md", "B.md"]  # the catalog follows B
    git(store, "update-ref", "refs/heads/main", first.commit)
    assert [(p.path, p.title, p.commit) for p in store.list()] == [("A.md", "A", first.commit)]
    assert [h.path for h in store.search("# b")] == []
    assert write(store, "C.md", "# C\n").changed


def test_a_repository_replaced_by_another_copy_is_read_afresh(store, tmp_path) -> None:
    write(store, "A.md", "# A\n")
    other = WikiStore(tmp_path / "other.git")
    write(other, "Z.md", "# Z\n")
    assert [p.path for p in store.list()] == ["A.md"]
    shutil.rmtree(store.path)
    shutil.copytree(other.path, store.path)  # a restore from another backup, server running
    assert [p.path for p in store.list()] == ["Z.md"]
    assert store.read("Z.md").content == "# Z\n"


def _corrupt(store: WikiStore, blob: str) -> None:
    loose = store.path / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    loose.write_bytes(b"garbage")


def test_an_unreadable_page_is_damage_not_a_missing_page(store, caplog) -> None:
    page = write(store, "Deploy.md", "# Deploy\n")
    write(store, "Home.md", "# Home\n")
    _corrupt(store, page.blob)
    with caplog.at_level(logging.ERROR), pytest.raises(WikiDamaged, match="restore it"):
        store.read("Deploy.md")
    assert str(store.path) in caplog.text and "Deploy.md" in caplog.text
    with pytest.raises(WikiNotFound):
        store.read("Never.md")  # a page that is not there is still just missing
    assert store.read("Home.md").content == "# Home\n"


def test_an_unreadable_object_fails_a_fresh_catalog_with_damage(tmp_path) -> None:
    store = WikiStore(tmp_path / "fresh.git")
    page = write(store, "Deploy.md", "# Deploy\n")
    _corrupt(store, page.blob)
    restarted = WikiStore(tmp_path / "fresh.git")  # as after a restart: nothing cached
    restarted.path.rename(tmp_path / "moved.git")  # a path the process never cached
    restarted = WikiStore(tmp_path / "moved.git")
    with pytest.raises(WikiDamaged):
        restarted.list()


def test_a_lost_repository_is_damage_once_it_was_created(tmp_path) -> None:
    record = Record()
    store = WikiStore(tmp_path / "7.git", record=record)
    assert store.list() == [] and not record.created  # never written: an empty wiki
    write(store, "Home.md", "# Home\n")
    assert record.created
    store.path.rename(tmp_path / "elsewhere.git")  # a volume not mounted, a bad restore
    for attempt in (store.list, store.head, lambda: store.read("Home.md"),
                    lambda: write(store, "New.md", "# New\n")):
        with pytest.raises(WikiDamaged):
            attempt()
    assert not store.path.exists()  # no fresh repository was started in its place
