"""Sentences translate whole (issue 25): where a sentence wraps markup (a name in bold, a path
in code, a link), it is one ``{% blocktranslate %}`` with the markup inside, so Chinese can put
the parts in its own order; these pages show each sentence whole, markup in place."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from apps.accounts.models import Team, User
from apps.wiki.services import page_delete, page_save
from tests.integration.i18n.test_language import CHINESE, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def wiki_dir(settings, tmp_path: Path) -> Path:
    settings.WIKI_DIR = tmp_path / "wiki"
    return settings.WIKI_DIR


def _page(user: User, url: str) -> str:
    response = signed_in(user).get(url, **CHINESE)
    return response.content.decode()


def test_signed_in_as_is_one_sentence(alice: User) -> None:
    page = _page(alice, reverse("accounts:account"))
    assert f"当前登录身份：<strong>alice</strong>（{alice.email}）。" in page


def test_the_missing_wiki_page_speaks_in_whole_sentences(alice: User, acme: Team) -> None:
    saved = page_save(team=acme, by=alice, path="Old.md", content="# Old\n", expected_blob=None,
                      message="Old")
    page_delete(team=acme, by=alice, path="Old.md", expected_blob=saved.blob, message="")
    page = _page(alice, reverse("wiki:page", args=[acme.pk, "Old.md"]))
    tree = reverse("wiki:tree", args=[acme.pk])
    assert (f'这个 Wiki 中没有 <code>Old.md</code>：可以创建它，或在<a href="{tree}">页面树</a>'
            "中查找。") in page
    assert "它曾经存在：它的<a href=" in page and "保留了每个版本，其中任何一个都可以恢复。" in page


def test_the_rename_help_is_one_sentence(alice: User, acme: Team) -> None:
    page_save(team=acme, by=alice, path="Home.md", content="# Home\n", expected_blob=None,
              message="Start")
    page = _page(alice, reverse("wiki:rename", args=[acme.pk, "Home.md"]))
    assert "用 / 表示文件夹；会自动加上 <code>.md</code>。历史会随之移动。" in page


def test_the_mcp_intro_is_one_sentence(alice: User, acme: Team) -> None:
    page = _page(alice, reverse("integrations:team_settings", args=[acme.pk]))
    assert "工具名为 <code>mcp__&lt;server&gt;__&lt;tool&gt;</code>。在本机上运行程序的" in page
