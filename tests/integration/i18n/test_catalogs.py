"""The translation catalogs (issue 25): every string a person reads is marked, every marked
string has a zh-Hans entry, and each committed ``.mo`` says exactly what its ``.po`` says.

When one fails after a merge, the message names each string and its file; ``make messages``
(README, "Translations") re-extracts the catalogs and compiles them once the new entries are
translated. Nothing here needs gettext's tools: the ``.po`` files are read with polib, the
``.mo`` files with the standard library, the templates with Django's own parser.
"""

from __future__ import annotations

import gettext
from pathlib import Path

import polib
import pytest

from tests.integration.i18n.scan import (
    ROOT,
    js_files,
    js_msgids,
    python_files,
    python_msgids,
    template_files,
    template_msgids,
    unmarked_js_strings,
    unmarked_template_strings,
)

CATALOGS = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES"
HOW = "mark it ({% translate %} / {% blocktranslate %}, or gettext() in JS), then `make messages`"


def _catalog(domain: str) -> gettext.GNUTranslations:
    with (CATALOGS / f"{domain}.mo").open("rb") as mo:
        return gettext.GNUTranslations(mo)


def _listing(problems: list[str]) -> str:
    return "\n".join(f"  {p}" for p in problems)


def test_every_template_string_is_marked_for_translation() -> None:
    unmarked = [str(u) for path in template_files() for u in unmarked_template_strings(path)]
    assert not unmarked, f"not marked for translation ({HOW}):\n{_listing(unmarked)}"


def test_every_script_string_is_marked_for_translation() -> None:
    unmarked = [str(u) for path in js_files() for u in unmarked_js_strings(path)]
    assert not unmarked, f"not marked for translation ({HOW}):\n{_listing(unmarked)}"


@pytest.mark.parametrize(("domain", "sources"), [
    ("django", lambda: [(p, template_msgids(p)) for p in template_files()]
     + [(p, python_msgids(p)) for p in python_files()]),
    ("djangojs", lambda: [(p, js_msgids(p)) for p in js_files()]),
], ids=["django", "djangojs"])
def test_every_marked_string_has_a_zh_hans_translation(domain, sources) -> None:
    catalog = _catalog(domain)._catalog  # type: ignore[attr-defined]
    singulars = {key if isinstance(key, str) else key[0] for key in catalog}
    missing = [f"{path.relative_to(ROOT)}: {msgid!r}" for path, msgids in sources()
               for msgid in msgids if msgid not in singulars]
    assert not missing, (f"no zh-Hans entry in locale/zh_Hans/LC_MESSAGES/{domain}.mo "
                         f"(run `make messages`, translate the new entries in {domain}.po, "
                         f"run it again):\n{_listing(sorted(set(missing)))}")


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_each_po_is_fully_translated(domain: str) -> None:
    po = polib.pofile(str(CATALOGS / f"{domain}.po"))
    assert not po.metadata_is_fuzzy  # msgfmt would skip the header, and Plural-Forms with it
    todo = [repr(e.msgid) for e in po if not e.translated() or e.obsolete]
    assert not todo, f"{domain}.po has entries without a translation:\n{_listing(todo)}"


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_each_mo_says_what_its_po_says(domain: str) -> None:
    """A ``.mo`` compiled before its ``.po`` last changed (stale) or missing an entry fails."""
    po = polib.pofile(str(CATALOGS / f"{domain}.po"))
    catalog = dict(_catalog(domain)._catalog)  # type: ignore[attr-defined]
    expected: dict[object, str] = {}
    for entry in po.translated_entries():
        key = f"{entry.msgctxt}\x04{entry.msgid}" if entry.msgctxt else entry.msgid
        if entry.msgid_plural:
            expected.update({(key, int(n)): text for n, text in entry.msgstr_plural.items()})
        else:
            expected[key] = entry.msgstr
    catalog.pop("", None)  # the header
    differ = sorted(repr(key) for key in expected.keys() | catalog.keys()
                    if expected.get(key) != catalog.get(key))
    assert not differ, (f"locale/zh_Hans/LC_MESSAGES/{domain}.mo is stale against its .po "
                        f"(run `make messages`):\n{_listing(differ)}")


def test_the_catalogs_are_committed_beside_each_other() -> None:
    names = sorted(p.name for p in Path(CATALOGS).iterdir())
    assert names == ["django.mo", "django.po", "djangojs.mo", "djangojs.po"]
