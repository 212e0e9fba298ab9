"""Pages read in zh-Hans carry no English (issue 25): each page a Chinese-speaking team opens is
rendered for a person whose language is zh-Hans, and every text a person reads on it (the text
of the page and its ``title``, ``aria-label``, ``placeholder`` and ``alt``) is searched for
English words.

The catalog tests find the strings of templates and JavaScript and the literal messages of
Python; they cannot see a text Python composes (an f-string status, a model's ``__str__``, a
choice label built from a code, a form label Django derives from a field's name). Rendering
finds those too. The fixtures' data is Chinese, so a Latin word left on a page is a name
written alike in both languages (:data:`ALIKE`), a name the fixtures gave (:data:`DATA`), code
(a path, an address, an identifier, a quoted example), or English.
"""

from __future__ import annotations

import gettext
import re
from html.parser import HTMLParser
from pathlib import Path

import django
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from apps.accounts.models import Membership, Role, Team, User
from apps.accounts.services import api_token_create, invitation_create
from apps.common.django_strings import DJANGO_STRINGS
from apps.integrations.models import ModelConfig, ProviderConfig
from apps.rooms.models import Conversation, Room, Run, RunStatus
from tests.integration.i18n.scan import CODE_ELEMENTS, HUMAN_ATTRIBUTES

pytestmark = pytest.mark.django_db

# Names written the same in the Chinese interface (its catalog keeps them so), and key names.
ALIKE = {"confab", "API", "Wiki", "MCP", "URL", "ID", "HTTP", "SSE", "Streamable", "OAuth",
         "stdio", "JSON", "Markdown", "JavaScript", "Django", "token", "Esc", "Enter", "Shift",
         "Authorization", "Bearer"}
# What the fixtures below name in Latin letters: user names, the model's id, the agent's handle.
DATA = {"laowang", "xiaoli", "vendor-large", "agent"}
# Django's own English that no catalog can reach: the admin's search icon (alt="Search" in
# admin/search_form.html) and its boolean icons (alt="True" / "False", _boolean_icon).
DJANGO_LITERALS = {"Search", "True", "False"}
LATIN_WORD = re.compile(r"[A-Za-z](?:[A-Za-z'-]*[A-Za-z])?")
# An address, a path, a handle, an identifier, a file name, a quoted example: code, not prose.
CODE = re.compile(r"\S*(?:[_/@]|\w\.\w)\S*|“[^”]*”")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class _Reading(HTMLParser):
    """The texts a person reads on a page, outside code elements and outside any element in
    another language (the header's switch names English in English, on purpose). An
    ``<option>`` that reads as its value (a time zone's IANA name) is data."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self._open: list[tuple[str, bool]] = []  # (tag, whether its text is not prose)
        self._option_value: str | None = None

    def _hidden(self) -> bool:
        return any(hides for _, hides in self._open)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        lang = attributes.get("lang")
        hides = self._hidden() or tag in CODE_ELEMENTS or (lang or "zh-hans") != "zh-hans"
        if tag not in VOID:
            self._open.append((tag, hides))
        self._option_value = attributes.get("value") if tag == "option" else None
        if not hides:
            self.texts += [value for name, value in attrs if name in HUMAN_ATTRIBUTES and value]

    def handle_endtag(self, tag: str) -> None:
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        text = " ".join(data.split())
        if text and not self._hidden() and text != self._option_value:
            self.texts.append(text)


def english(html: str) -> list[str]:
    """The texts of ``html`` with a Latin word that is neither alike, nor data, nor code."""
    reading = _Reading()
    reading.feed(html)
    allowed = ALIKE | DATA
    return sorted({text for text in reading.texts if text not in DJANGO_LITERALS and any(
        word not in allowed for word in LATIN_WORD.findall(CODE.sub(" ", text)))})


@pytest.fixture
def laowang(db: None) -> User:
    """The owner of 研发部, a staff member who reads zh-Hans; 小李 is a member."""
    owner = User.objects.create_superuser("laowang", "laowang@example.com", "pw",
                                          display_name="老王", language="zh-hans")
    member = User.objects.create_user("xiaoli", "xiaoli@example.com", "pw", display_name="小李")
    team = Team.objects.create(name="研发部", slug="yanfa")
    Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    Membership.objects.create(team=team, user=member, role=Role.MEMBER)
    invitation_create(team=team, role="member", by=owner, email="xiaozhang@example.com")
    api_token_create(user=owner, name="笔记本脚本")
    provider = ProviderConfig.objects.create(name="供应商", kind="openai",
                                             base_url="https://llm.example.com/v1")
    ModelConfig.objects.create(provider=provider, model_id="vendor-large", display_name="大模型")
    return owner


def _read(client: Client, url: str) -> list[str]:
    response = client.get(url)
    assert response.status_code == 200, url
    html = response.content.decode()
    assert '<html lang="zh-hans"' in html, url
    return english(html)


def test_the_pages_of_a_team_have_no_english(laowang: User) -> None:
    team = Team.objects.get(slug="yanfa")
    client = Client()
    client.force_login(laowang)
    urls = [reverse("accounts:team_new"), reverse("accounts:tokens"),
            reverse("accounts:team_members", args=[team.pk]),
            reverse("integrations:team_settings", args=[team.pk]), reverse("admin:index"),
            reverse("admin:accounts_team_change", args=[team.pk]),
            reverse("admin:accounts_user_changelist")]
    problems = [f"{url}: {text!r}" for url in urls for text in _read(client, url)]
    assert not problems, "English on zh-Hans pages:\n" + "\n".join(problems)


@pytest.mark.parametrize(("status", "stopped", "error_kind"), [
    (None, False, ""), (RunStatus.COMPLETED, False, ""), (RunStatus.CANCELLED, True, ""),
    (RunStatus.CANCELLED, False, ""), (RunStatus.INTERRUPTED, False, ""),
    (RunStatus.FAILED, False, "provider_error"), (RunStatus.FAILED, False, ""),
])
def test_the_room_page_says_how_the_last_run_ended_in_chinese(
        laowang: User, status: str | None, stopped: bool, error_kind: str) -> None:
    room = Room.objects.create(team=Team.objects.get(slug="yanfa"), name="日常", created_by=laowang)
    conversation = Conversation.objects.create(room=room, title="发版计划", created_by=laowang)
    if status:
        Run.objects.create(conversation=conversation, status=status, started_by=laowang,
                           stopped_by=laowang if stopped else None, error_kind=error_kind)
    client = Client()
    client.force_login(laowang)
    assert _read(client, reverse("rooms:conversation", args=[conversation.pk])) == []


def test_the_django_strings_we_translate_are_missing_from_djangos_catalog() -> None:
    """Each string of :data:`DJANGO_STRINGS` is ours to translate only while Django's zh_Hans
    catalog has no entry for it: when a Django release translates it, this fails, and the
    string can leave ours."""
    django_catalog = gettext.translation("django", Path(django.__file__).parent / "conf" / "locale",
                                         ["zh_Hans"])
    for text in DJANGO_STRINGS:
        assert django_catalog.gettext(text) == text
        with translation.override("zh-hans"):
            assert translation.gettext(text) != text
