"""The wiki's live banner (``apps/wiki/static/wiki/live.js``, ``describe``) run in node: a page
that shows no version of its own (history, diff, rename) is never told the page "was changed"
by the state frame every socket gets on connect; a page that shows a version still is."""

from __future__ import annotations

from pathlib import Path

from tests.unit.rooms.node import run_js

WIKI_STATIC = Path(__file__).resolve().parents[2] / "apps/wiki/static/wiki"
STATE = {"type": "wiki_page", "path": "Notes.md", "blob": "b1", "commit": "c1", "author": "Alice"}


def describe(frame: dict, mode: str, page: dict) -> object:
    return run_js("live.js", "{ describe }",
                  "globalThis.gettext = (s) => s;\n"  # called at run time, not at import
                  "output(describe(input.frame, input.mode, input.page));",
                  {"frame": frame, "mode": mode, "page": page}, static=WIKI_STATIC)


def test_a_page_without_a_version_of_its_own_gets_no_banner_from_the_state_frame() -> None:
    history = {"path": "Notes.md", "blob": None, "commit": "", "me": "Bob"}
    assert describe(STATE, "read", history) is None


def test_a_page_showing_an_older_version_is_told_it_changed() -> None:
    page = {"path": "Notes.md", "blob": "b0", "commit": "c0", "me": "Bob", "pageUrl": "/w"}
    parts = describe(STATE, "read", page)
    assert parts[0] == "This page was changed by " and parts[1] == {"text": "Alice"}
    assert describe(STATE, "read", {**page, "blob": "b1"}) is None  # the version it shows
