"""A fresh wiki per test (real git in tmp_path), and the people who write it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from apps.engine.wiki import Author, WikiStore

ALICE = Author("Alice Smith", "user-1@users.confab.invalid", {"Confab-User": "1"})
BOB = Author("Bob Jones", "user-2@users.confab.invalid", {"Confab-User": "2"})


@pytest.fixture
def store(tmp_path: Path) -> WikiStore:
    return WikiStore(tmp_path / "7.git")


def git(store: WikiStore, *args: str) -> str:
    """Plain git on the store's repository, as an operator would run it."""
    return subprocess.run(["git", f"--git-dir={store.path}", *args], check=True,
                          capture_output=True, text=True).stdout


def commits_on_main(store: WikiStore) -> int:
    return int(git(store, "rev-list", "--count", "refs/heads/main"))
