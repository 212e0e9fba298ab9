"""Wiki fixtures: every test's repositories in a WIKI_DIR of its own, clients signed in as a
persona, and Acme's wiki with alice's Home page (the personas come from
``tests/integration/personas.py``, the clients from the API's conftest)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from apps.accounts.models import Team, User
from apps.engine.wiki import WriteResult
from apps.wiki.services import page_save
from apps.wiki.stores import store_for
from tests.integration.api.conftest import session_client, token_client  # noqa: F401

HOME = "# Home\n\nWelcome to the Acme wiki.\n\nSee [Deploy](Runbooks/Deploy.md).\n"


@pytest.fixture(autouse=True)
def wiki_dir(settings, tmp_path: Path) -> Path:
    """A WIKI_DIR for this test alone."""
    settings.WIKI_DIR = tmp_path / "wiki"
    return settings.WIKI_DIR


@pytest.fixture
def home(acme: Team, alice: User) -> WriteResult:
    """Acme's Home.md, written by alice (the wiki's first commit)."""
    return page_save(team=acme, by=alice, path="Home.md", content=HOME, expected_blob=None,
                     message="Start the wiki")


def git(team: Team, *args: str) -> str:
    """Plain git on the team's bare repository, as an operator would run it."""
    return subprocess.run(["git", f"--git-dir={store_for(team).path}", *args], check=True,
                          capture_output=True, text=True).stdout
