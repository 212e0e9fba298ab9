"""Path and revision rules (issue 9 test 4): traversal and reserved names are refused before git
sees them; CJK names are fine."""

from __future__ import annotations

import pytest

from apps.engine.wiki import WikiInvalid, WikiNotFound
from apps.engine.wiki.limits import ATTACHMENT_EXTENSIONS
from apps.engine.wiki.paths import check_file_path, check_new_name, check_revision

from .conftest import ALICE

REFUSED = [
    "../x.md", "a/../../x.md", "/etc/passwd", ".git/config", ".GIT/hooks/x.md", "a/.git/x.md",
    "git~1/x.md", "GIT~2/x.md", "x\x00y.md", "\uff0e\uff0e/x.md", "\uff0egit/x.md",
    "Home.md.", "Home.md ", "a /b.md", "-p.md", "--output=Home.md", "x" * 300 + ".md",
    "a/b/c/d/e/f/g/h/i.md", "a//b.md", "a/", "", ".md", "Home", "Home.MD", "a\\b.md",
    "a:b.md", "a*b.md", "x\u202e.md", "x\u200b.md", ".g\u200cit/x.md", "x\u034f.md",
    "e\u0301.md",  # NFD: the NFC twin "é.md" is the one accepted
    "_files/x.svg", "_files/page.html", "_files/noext", "x\n.md",
    "Home\u00a0.md", "a\u3000b.md", "\u2003x.md",  # spaces that look like none or like U+0020
    "con.md", "AUX/x.md", "nul.tar.md", "lpt1.md", "Com9/y.md",  # Windows device names
]
ACCEPTED = ["Home.md", "指南.md", "運用/手順書.md", "é.md", "a/b/c/d/e/f/g/h.md", "_files/x.png",
            "Notes 2026 (draft).md", "a.b.md", "git.md", "_files/docs/report.pdf",
            "console.md", "com10.md", "auxiliary/x.md"]


@pytest.mark.parametrize("path", REFUSED)
def test_a_path_the_rules_refuse_is_invalid(path: str) -> None:
    with pytest.raises(WikiInvalid):
        check_file_path(path, attachment_extensions=ATTACHMENT_EXTENSIONS)


@pytest.mark.parametrize("path", ACCEPTED)
def test_a_path_the_rules_accept_is_kept_as_given(path: str) -> None:
    assert check_file_path(path, attachment_extensions=ATTACHMENT_EXTENSIONS) == path


@pytest.mark.parametrize("rev", ["--output=Home.md", "-p", "main", "HEAD~1", "abc1234",
                                 "A" * 40, "0" * 39, "HEAD ", "@{-1}", "main:Home.md", ""])
def test_a_revision_that_is_not_a_full_id_or_head_is_not_found(rev: str) -> None:
    with pytest.raises(WikiNotFound):
        check_revision(rev)


def test_names_that_differ_only_by_case_cannot_share_a_folder(store) -> None:
    store.write("Home.md", "# Home", expected_blob=None, message="", author=ALICE)
    store.write("Docs/Guide.md", "# Guide", expected_blob=None, message="", author=ALICE)
    for path in ("home.md", "HOME.md", "docs/Other.md", "Docs/guide.md", "Home.md/x.md"):
        with pytest.raises(WikiInvalid, match="clashes"):
            store.write(path, "x", expected_blob=None, message="", author=ALICE)
    assert [p.path for p in store.list()] == ["Docs/Guide.md", "Home.md"]


def test_a_rename_may_change_only_the_letter_case(store) -> None:
    blob = store.write("Home.md", "# Home", expected_blob=None, message="", author=ALICE).blob
    store.rename("Home.md", "home.md", expected_blob=blob, message="", author=ALICE)
    assert [p.path for p in store.list()] == ["home.md"]


def test_a_new_name_may_not_hold_what_bad_url_bytes_decode_to(store) -> None:
    with pytest.raises(WikiInvalid, match="U\\+FFFD"):
        check_new_name("\ufffd\ufffd.md")  # %FF%FE.md and %FE%FF.md alike, through Daphne
    with pytest.raises(WikiInvalid):
        store.write("Caf\ufffd.md", "x", expected_blob=None, message="", author=ALICE)
    blob = store.write("Cafe.md", "x", expected_blob=None, message="", author=ALICE).blob
    with pytest.raises(WikiInvalid):
        store.rename("Cafe.md", "Caf\ufffd.md", expected_blob=blob, message="", author=ALICE)
    assert check_new_name("Caf\u00e9.md") == "Caf\u00e9.md"
