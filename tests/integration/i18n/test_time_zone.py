"""Dates in the person's own time zone and the locale's format (issue 25): a ``time_zone`` on
the profile (an IANA name; blank: the site's ``TIME_ZONE``), chosen on the account page and
activated per request; the wiki's "last changed" shows it instead of a fixed "UTC"."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import formats, translation

from apps.accounts.models import Team, User
from apps.rooms.models import Conversation, Room
from apps.wiki.rendering import page_url
from apps.wiki.services import page_save
from tests.integration.i18n.test_language import CHINESE, ENGLISH, signed_in

pytestmark = pytest.mark.django_db

ACCOUNT = reverse("accounts:account")
SAVE = reverse("accounts:time_zone")
_LAST_CHANGED = re.compile(r'<time datetime="([^"]+)">([^<]+)</time>')


@pytest.fixture(autouse=True)
def wiki_dir(settings, tmp_path: Path) -> Path:
    settings.WIKI_DIR = tmp_path / "wiki"
    return settings.WIKI_DIR


def _last_changed(user: User, team: Team, **headers: str) -> tuple[datetime, str]:
    """The wiki page's "last changed" date (as its ``datetime`` attribute) and its text."""
    page = signed_in(user).get(page_url(team.pk, "Home.md"), **headers).content.decode()
    stamp, shown = _LAST_CHANGED.search(page).groups()  # type: ignore[union-attr]
    return datetime.fromisoformat(stamp), shown


def _written(when: datetime, language: str, zone: str) -> str:
    with translation.override(language):
        return f'{formats.date_format(when, "SHORT_DATETIME_FORMAT")} {zone}'


def test_the_wiki_shows_dates_in_the_persons_zone_and_locale(alice: User, acme: Team) -> None:
    page_save(team=acme, by=alice, path="Home.md", content="# Home\n", expected_blob=None,
              message="Start")
    when, shown = _last_changed(alice, acme, **ENGLISH)
    assert when.utcoffset() == timedelta(0) and shown == _written(when, "en", "UTC")
    alice.time_zone = "Asia/Shanghai"
    alice.language = "zh-hans"
    alice.save()
    when_there, shown = _last_changed(alice, acme, **ENGLISH)
    assert when_there == when and when_there.utcoffset() == timedelta(hours=8)
    assert shown == _written(when_there, "zh-hans", "CST")


def test_the_account_page_keeps_the_chosen_zone(alice: User) -> None:
    client = signed_in(alice)
    assert '<option value="Asia/Shanghai">' in client.get(ACCOUNT, **CHINESE).content.decode()
    saved = client.post(SAVE, {"time_zone": "Asia/Shanghai"}, follow=True, **CHINESE)
    alice.refresh_from_db()
    assert alice.time_zone == "Asia/Shanghai"
    page = saved.content.decode()
    assert "时区已保存" in page and "（当前为 Asia/Shanghai）" in page
    client.post(SAVE, {"time_zone": ""})  # back to the site's zone
    alice.refresh_from_db()
    assert alice.time_zone == ""


def test_an_unknown_zone_is_refused_and_nothing_changes(alice: User) -> None:
    alice.time_zone = "Europe/Berlin"
    alice.save()
    refused = signed_in(alice).post(SAVE, {"time_zone": "Mars/Olympus"}, follow=True,
                                    **CHINESE).content.decode()
    alice.refresh_from_db()
    assert alice.time_zone == "Europe/Berlin"
    assert "Mars/Olympus" in refused  # the form's refusal names the bad choice


def test_the_room_list_shows_dates_in_the_persons_zone_and_locale(alice: User,
                                                                   acme: Team) -> None:
    room = Room.objects.create(team=acme, name="General", created_by=alice)
    started = Conversation.objects.create(room=room, title="Plans", created_by=alice)
    alice.time_zone, alice.language = "Asia/Shanghai", "zh-hans"
    alice.save()
    page = signed_in(alice).get(reverse("rooms:room_list")).content.decode()
    there = started.created_at.astimezone(timezone(timedelta(hours=8)))
    with translation.override("zh-hans"):
        written = formats.date_format(there, "SHORT_DATETIME_FORMAT")
    assert f'">{written}</time>' in page


def test_the_room_page_gives_its_script_the_persons_zone(alice: User, acme: Team) -> None:
    room = Room.objects.create(team=acme, name="General", created_by=alice)
    conversation = Conversation.objects.create(room=room, title="Plans", created_by=alice)
    url = reverse("rooms:conversation", args=[conversation.pk])
    assert 'data-time-zone="UTC"' in signed_in(alice).get(url).content.decode()
    alice.time_zone = "Asia/Shanghai"
    alice.save()
    assert 'data-time-zone="Asia/Shanghai"' in signed_in(alice).get(url).content.decode()
