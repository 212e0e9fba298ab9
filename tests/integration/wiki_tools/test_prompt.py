"""The model knows the wiki (issue 10): the run's system prompt says it exists, how to use the
tools and what is at its top level, in a bounded number of lines."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from apps.accounts.models import Team, User
from apps.engine.wiki import PageInfo, WikiStore
from apps.integrations.demo import ensure_demo_models
from apps.rooms.host import RunHost
from apps.rooms.models import Conversation, Room, Run
from apps.rooms.wiki import PROMPT_PAGES, wiki_prompt
from apps.wiki.stores import store_for
from tests.integration.wiki_tools.conftest import SEEDER, seed

pytestmark = pytest.mark.django_db


def test_an_empty_wiki_is_introduced_with_its_tools(acme: Team) -> None:
    prompt = wiki_prompt(store_for(acme))
    assert "The team has a wiki" in prompt and "WikiWrite" in prompt and "wiki/" in prompt
    assert prompt.endswith("The wiki is empty so far.")


def test_the_prompt_names_the_top_level_pages_and_folders_in_bounded_lines(acme: Team) -> None:
    pages = {f"Page{i:02}.md": f"# Title {i}\ntext\n" for i in range(30)}
    pages.update({f"ops/Run{i}.md": "# Run\n" for i in range(5)})
    pages["Long.md"] = "# " + "very long title " * 20 + "\n"
    seed(acme, pages)
    lines = wiki_prompt(store_for(acme)).splitlines()
    assert len(lines) <= PROMPT_PAGES + 5
    assert lines[1] == "The wiki has 36 pages. At its top level:"
    assert "- Long.md: very long title" in lines[2] and lines[2].endswith("…")
    assert lines[3] == "- Page00.md: Title 0"
    assert "- ... and 11 more (WikiList shows them all)" in lines
    assert lines[-1] == "Folders: ops/ (5)."


def test_the_section_is_kept_until_main_moves_whether_its_ref_is_loose_or_packed(
        acme: Team) -> None:
    store = seed(acme, {"Home.md": "# Acme home\n"})
    first = wiki_prompt(store)
    assert wiki_prompt(store_for(acme)) is first  # kept: no git this time
    seed(acme, {"Plans.md": "# Plans\n"})
    second = wiki_prompt(store)
    assert "- Plans.md: Plans" in second and "- Home.md: Acme home" in second
    git(store, "pack-refs", "--all")
    assert not (store.path / "refs/heads/main").exists()  # main is in packed-refs only
    packed = wiki_prompt(store)
    assert packed == second and wiki_prompt(store) is packed
    seed(acme, {"Zebra.md": "# Zebra\n"})  # a loose ref again, beside the packed one
    assert "- Zebra.md: Zebra" in wiki_prompt(store)


def test_a_section_listed_while_main_moved_is_not_kept_for_the_older_commit(
        acme: Team) -> None:
    store = seed(acme, {"Home.md": "# Acme home\n"})
    before = git(store, "rev-parse", "main")

    class MovedWhileListing(WikiStore):
        def list(self, prefix: str = "") -> list[PageInfo]:
            self.commit_files({"Later.md": "# Later\n"}, message="Later", author=SEEDER)
            return super().list(prefix)

    moving = MovedWhileListing(store.path, limits=store.limits, record=store.record)
    assert "- Later.md: Later" in wiki_prompt(moving)
    git(store, "update-ref", "refs/heads/main", before)  # an operator restores a backup
    assert "Later.md" not in wiki_prompt(store)


def test_a_main_that_is_a_symbolic_ref_is_read_through_git_every_time(acme: Team) -> None:
    store = seed(acme, {"Home.md": "# Acme home\n"})
    git(store, "update-ref", "refs/heads/trunk", "main")
    git(store, "symbolic-ref", "refs/heads/main", "refs/heads/trunk")
    assert "- Home.md: Acme home" in wiki_prompt(store)
    seed(acme, {"Plans.md": "# Plans\n"})  # moves trunk; main's file still names trunk
    assert "- Plans.md: Plans" in wiki_prompt(store)


@pytest.mark.parametrize("broken", [lambda good: b"[core\n",
                                    lambda good: good + b"[user]\n\tname = Ren\xe9\n"],
                         ids=["git refuses it", "git reads it, gitpython does not"])
def test_a_wiki_that_cannot_be_read_is_not_kept_as_such(
        acme: Team, broken: Callable[[bytes], bytes]) -> None:
    store = seed(acme, {"Home.md": "# Acme home\n"})
    path = store.path / "config"
    good = path.read_bytes()
    path.write_bytes(broken(good))
    refused = wiki_prompt(store)
    assert "cannot be read right now" in refused and str(store.path) not in refused
    path.write_bytes(good)
    assert "- Home.md: Acme home" in wiki_prompt(store)


def git(store: WikiStore, *args: str) -> str:
    """Run git on the store's bare repository (as an operator would); its output."""
    return subprocess.run(["git", "--git-dir", str(store.path), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_run_is_set_up_with_the_wiki_in_its_system_prompt(acme: Team, alice: User) -> None:
    ensure_demo_models(acme, fakellm_url="http://127.0.0.1:9")
    seed(acme, {"Home.md": "# Acme home\n"})
    room = Room.objects.create(team=acme, name="General", created_by=alice)
    conversation = Conversation.objects.create(room=room, title="Plans", created_by=alice)
    run = Run.objects.create(conversation=conversation, started_by=alice)
    setup = RunHost(run.pk)._setup()
    assert setup.config.system is not None
    assert "- Home.md: Acme home" in setup.config.system
    assert setup.wiki is not None and setup.wiki.team == acme and setup.wiki.user == alice
