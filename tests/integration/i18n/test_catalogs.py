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
from django.apps import apps
from django.conf import settings
from django.utils import translation

from apps.common.errors import NOT_FOUND_MESSAGES
from tests.integration.i18n.scan import (
    ROOT,
    django_python_files,
    js_files,
    js_msgids,
    not_found_kinds,
    python_files,
    python_msgids,
    template_files,
    template_msgids,
    unmarked_js_strings,
    unmarked_python_strings,
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


def test_every_python_message_is_marked_for_translation() -> None:
    """Refusals (ApplicationError, ValidationError, PermissionDenied), notices, labels, help
    texts, verbose names and admin descriptions written as literals in our Django apps."""
    unmarked = [str(u) for path in django_python_files() for u in unmarked_python_strings(path)]
    assert not unmarked, f"not marked for translation (wrap it in gettext):\n{_listing(unmarked)}"


def test_every_not_found_kind_has_its_own_sentence() -> None:
    unknown = [f"{path.relative_to(ROOT)}:{line}: {what!r}" for path in django_python_files()
               for line, what in not_found_kinds(path) if what not in NOT_FOUND_MESSAGES]
    assert not unknown, f"add a sentence to NOT_FOUND_MESSAGES for:\n{_listing(unknown)}"


def _untranslated(value: object, catalog: dict) -> bool:
    """Whether ``value`` (a str or a lazy translation) reads the same in zh-Hans as in English
    without being an entry of our catalog or Django's (e.g. "URL" is written alike)."""
    with translation.override("en"):
        english = str(value)
    with translation.override("zh-hans"):
        chinese = str(value)
    return chinese == english and english not in catalog


def _field_label_problem(field, catalog: dict) -> str | None:
    """Why ``field``'s admin label is not ours in zh-Hans, or None when it is.

    Without an explicit ``verbose_name`` Django derives the label from the field's name
    (``Field.set_attributes_from_name``), English in every language; only ``deconstruct()``
    tells the two apart. An explicit label needs its own entry in our catalog, because one that
    Django's catalogs happen to translate ("name", "created") may read differently in a later
    Django release or mean something else there."""
    if "verbose_name" not in field.deconstruct()[3]:
        return "has no explicit verbose_name (Django's English default)"
    with translation.override("en"):
        english = str(field.verbose_name)
    if english not in catalog:
        return "has no entry in locale/zh_Hans/LC_MESSAGES/django.po"
    return None


def _declared_by_us(model: type, name: str) -> bool:
    """Whether the field ``name`` of ``model`` was written in one of our apps: abstract
    parents' fields are copied into each child, so the class that declared it is the most
    basic one in the MRO whose own fields include it."""
    declaring = [cls for cls in model.__mro__ if "_meta" in vars(cls)
                 and any(f.name == name for f in cls._meta.local_fields
                         + cls._meta.local_many_to_many)]
    return declaring[-1].__module__.startswith("apps.")


@pytest.mark.django_db
def test_every_model_of_ours_names_itself_in_zh_hans() -> None:
    """Each model's verbose_name(_plural), each field's verbose_name, help_text and choice
    labels: what the admin shows."""
    catalog = _catalog("django")._catalog  # type: ignore[attr-defined]
    problems = []
    for model in apps.get_models():
        if not model.__module__.startswith("apps."):
            continue
        meta = model._meta
        texts = [("verbose_name", meta.verbose_name),
                 ("verbose_name_plural", meta.verbose_name_plural)]
        for field in meta.get_fields():
            if field.auto_created:  # the primary key, reverse relations
                continue
            texts.append((f"{field.name}.help_text", getattr(field, "help_text", "")))
            choices = list(getattr(field, "flatchoices", None) or [])
            if choices != list(settings.LANGUAGES):  # languages are named in their own
                texts += [(f"{field.name} choice {value!r}", label) for value, label in choices]
            if _declared_by_us(model, field.name):  # not AbstractUser's username, email…
                problem = _field_label_problem(field, catalog)
                if problem:
                    problems.append(f"{meta.label} {field.name}.verbose_name "
                                    f"{str(field.verbose_name)!r} {problem}")
        problems += [f"{meta.label} {where}: {str(text)!r}" for where, text in texts
                     if str(text) and _untranslated(text, catalog)]
    assert not problems, f"untranslated in zh-Hans:\n{_listing(problems)}"


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
