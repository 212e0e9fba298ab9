"""Which language a page speaks (issue 25): the person's own choice, else the browser's
``Accept-Language``; ``<html lang>`` names it; the header's switch and the account page change
it; the room's JavaScript gets the same language from the catalog."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.core import mail
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from apps.accounts.models import User

pytestmark = pytest.mark.django_db

LOGIN = reverse("accounts:login")
ACCOUNT = reverse("accounts:account")
SWITCH = reverse("accounts:language")
CATALOG = reverse("javascript-catalog")
CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9,en;q=0.5"}
ENGLISH = {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}
CONNECTING = json.dumps("正在连接…")[1:-1]  # as the catalog writes it (JSON, ASCII escapes)


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_chinese_browser_gets_chinese_pages() -> None:
    page = Client().get(LOGIN, **CHINESE).content.decode()
    assert '<html lang="zh-hans">' in page and "<h1>登录</h1>" in page
    assert 'lang="en">English</button>' in page  # the switch offers the other language


def test_other_browsers_get_english() -> None:
    for headers in (ENGLISH, {"HTTP_ACCEPT_LANGUAGE": "fr-FR,fr;q=0.9"}, {}):
        page = Client().get(LOGIN, **headers).content.decode()
        assert '<html lang="en">' in page and "<h1>Log in</h1>" in page
        assert 'lang="zh-hans">简体中文</button>' in page


def test_the_persons_choice_beats_the_browser(alice: User) -> None:
    alice.language = "zh-hans"
    alice.save()
    page = signed_in(alice).get(ACCOUNT, **ENGLISH)
    assert page["Content-Language"] == "zh-hans"
    assert "<h1>我的账户</h1>" in page.content.decode()


def test_the_switch_keeps_the_choice_on_the_profile_and_goes_back(alice: User) -> None:
    client = signed_in(alice)
    response = client.post(SWITCH, {"language": "zh-hans", "next": ACCOUNT}, **ENGLISH)
    assert response.status_code == 302 and response["Location"] == ACCOUNT
    alice.refresh_from_db()
    assert alice.language == "zh-hans"
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    other_browser = signed_in(alice)  # the profile follows the person, not the cookie
    assert "<h1>我的账户</h1>" in other_browser.get(ACCOUNT, **ENGLISH).content.decode()
    client.post(SWITCH, {"language": "", "next": ACCOUNT})  # back to the browser's choice
    alice.refresh_from_db()
    assert alice.language == ""
    assert "<h1>Your account</h1>" in other_browser.get(ACCOUNT, **ENGLISH).content.decode()


def test_a_visitor_switches_with_the_cookie_alone() -> None:
    client = Client()
    client.post(SWITCH, {"language": "zh-hans", "next": LOGIN}, **ENGLISH)
    assert "<h1>登录</h1>" in client.get(LOGIN, **ENGLISH).content.decode()


def test_an_unknown_language_is_refused_and_nothing_changes(alice: User) -> None:
    alice.language = "zh-hans"
    alice.save()
    client = signed_in(alice)
    response = client.post(SWITCH, {"language": "fr", "next": ACCOUNT}, follow=True)
    alice.refresh_from_db()
    assert alice.language == "zh-hans"
    assert settings.LANGUAGE_COOKIE_NAME not in response.cookies
    assert "fr" in response.content.decode()  # the form's error names the bad choice


def test_the_switch_never_sends_anyone_off_site(alice: User) -> None:
    response = signed_in(alice).post(SWITCH, {"language": "en",
                                              "next": "https://evil.example/x"})
    assert response["Location"] == "/"


def test_the_javascript_catalog_speaks_the_pages_language(alice: User) -> None:
    assert CONNECTING in Client().get(CATALOG, **CHINESE).content.decode()
    alice.language = "zh-hans"
    alice.save()
    assert CONNECTING in signed_in(alice).get(CATALOG, **ENGLISH).content.decode()
    assert CONNECTING not in Client().get(CATALOG, **ENGLISH).content.decode()


def test_the_account_page_offers_the_languages(alice: User) -> None:
    page = signed_in(alice).get(ACCOUNT, **ENGLISH).content.decode()
    for code in ("", "en", "zh-hans"):
        assert f'<option value="{code}"' in page


def test_the_header_switch_goes_back_to_the_page_it_was_on(alice: User) -> None:
    page = f"http://testserver{ACCOUNT}"
    response = signed_in(alice).post(SWITCH, {"language": "zh-hans"}, HTTP_REFERER=page)
    assert response["Location"] == page


def test_roles_and_notices_from_python_are_translated_too(alice: User, acme) -> None:
    alice.language = "zh-hans"
    alice.save()
    client = signed_in(alice)
    members = client.get(reverse("accounts:team_members", args=[acme.pk])).content.decode()
    assert "所有者" in members  # Role.OWNER's label
    invited = client.post(reverse("accounts:invitation_new", args=[acme.pk]),
                          {"role": "member"}, follow=True).content.decode()
    assert "请立即发送此链接。" in invited


@pytest.mark.parametrize(("language", "browser", "subject"), [
    ("zh-hans", ENGLISH, "重置你的 confab 密码"),  # the account's choice beats the requester's
    ("en", CHINESE, "Reset your confab password"),
    ("", CHINESE, "重置你的 confab 密码"),  # no choice: the requester's language
])
def test_the_password_reset_mail_speaks_the_accounts_language(
        alice: User, language: str, browser: dict[str, str], subject: str) -> None:
    alice.language = language
    alice.save()
    response = Client().post(reverse("accounts:password_reset"), {"email": alice.email},
                             **browser)
    assert response.status_code == 302
    (sent,) = mail.outbox
    assert sent.subject == subject
    assert ("有人申请重置" in sent.body) == subject.startswith("重置")


@pytest.mark.parametrize(("url", "data", "refusal"), [
    (LOGIN, {"username": "alice", "password": "wrong"}, "登录失败次数过多。请过几分钟再试。"),
    (reverse("accounts:signup"), {"username": "erin", "email": "erin@example.com",
                                  "password1": "a-long-passphrase-9",
                                  "password2": "a-long-passphrase-9"},
     "来自这里或使用该邮箱地址的注册次数过多。请过几分钟再试。"),
    (reverse("accounts:password_reset"), {"email": "alice@example.com"},
     "密码重置请求过多。请过几分钟再试。"),
])
def test_a_throttled_form_says_so_in_chinese(settings, alice: User, url: str,
                                             data: dict[str, str], refusal: str) -> None:
    settings.CONFAB = {**settings.CONFAB, "LOGIN_FAILURES": 1, "SIGNUP_CLIENT_ATTEMPTS": 0,
                       "PASSWORD_RESET_ATTEMPTS": 0}
    cache.clear()
    client = Client()
    client.post(url, data, **CHINESE)
    response = client.post(url, data, **CHINESE)
    cache.clear()
    assert response.status_code == 429
    assert refusal in response.content.decode()
