"""The admin of our models in zh-Hans (issue 25): a member of staff whose language is zh-Hans
reads every column of each changelist and every label of each change form in Chinese.

A label counts as English when it still has a Latin word that is not one of the names written
alike in both languages (``ID``, ``URL``, ``MCP`` …): what Django shows for a field without a
translated ``verbose_name`` ("Display name"), or an untranslated ``admin.display``
description."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.contrib import admin
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Team, User
from apps.accounts.services import api_token_create, invitation_create
from apps.integrations.models import (
    McpServerConfig,
    ModelConfig,
    ProviderConfig,
    TeamMcpEnablement,
)

pytestmark = pytest.mark.django_db

# Names and units written the same in the Chinese interface (the catalog keeps them so).
ALIKE = {"ID", "URL", "MCP", "API", "HTTP", "OAuth", "stdio"}
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z-]*")


class _Labels(HTMLParser):
    """The texts of ``<label>`` elements, of fieldset headings and of the ``<th>`` in a
    ``<thead>``: a change form's field labels and sections, a changelist's and a tabular
    inline's column headers. A row's own ``<th>`` (the object's name) is data, and so are the
    options of a ``<select>`` inside a label."""

    def __init__(self) -> None:
        super().__init__()
        self.labels: list[str] = []
        self._open: list[list[str]] = []  # [tag, text so far] of each label being read
        self._in_thead = self._in_select = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("thead", "select"):
            setattr(self, f"_in_{tag}", True)
        elif (tag == "label" or (tag == "th" and self._in_thead)
              or "fieldset-heading" in (dict(attrs).get("class") or "")):
            self._open.append([tag, ""])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("thead", "select"):
            setattr(self, f"_in_{tag}", False)
        elif self._open and self._open[-1][0] == tag:
            text = " ".join(self._open.pop()[1].split()).rstrip(":：")
            if text:
                self.labels.append(text)

    def handle_data(self, data: str) -> None:
        if self._open and not self._in_select:
            self._open[-1][1] += data


def english_labels(html: str) -> list[str]:
    """The labels of ``html`` that still have a Latin word other than :data:`ALIKE`."""
    parser = _Labels()
    parser.feed(html)
    return [label for label in parser.labels
            if any(word not in ALIKE for word in LATIN_WORD.findall(label))]


@pytest.fixture
def one_of_each(acme: Team, alice: User) -> None:
    """A row of every model our admin lists, so each changelist has its columns."""
    invitation_create(team=acme, role="member", by=alice, email="dave@example.com")
    api_token_create(user=alice, name="ci")
    provider = ProviderConfig.objects.create(name="local", kind="openai",
                                             base_url="http://127.0.0.1:9/v1", api_key="k")
    ModelConfig.objects.create(provider=provider, model_id="confab-offline")
    server = McpServerConfig.objects.create(name="shared", transport="stdio", catalog=True,
                                            command="/nonexistent/mcp-server")
    TeamMcpEnablement.objects.create(team=acme, server=server, enabled_by=alice)


@pytest.fixture
def chinese_staff(db: None) -> Client:
    staff = User.objects.create_superuser("root", "root@example.com", "pw", language="zh-hans")
    client = Client()
    client.force_login(staff)
    return client


def _our_admins() -> list[type[Model]]:
    return sorted((model for model in admin.site._registry
                   if model.__module__.startswith("apps.")), key=lambda m: m._meta.label)


def test_each_admin_of_ours_has_no_english_label_in_zh_hans(
    one_of_each: None, chinese_staff: Client,
) -> None:
    models = _our_admins()
    assert len(models) >= 8  # accounts' four and integrations' four at least
    problems = []
    for model in models:
        meta = model._meta
        obj = model._default_manager.order_by("pk").first()
        assert obj is not None, f"the fixture made no {meta.label}"
        for page in ("changelist", "change"):
            args = [obj.pk] if page == "change" else []
            url = reverse(f"admin:{meta.app_label}_{meta.model_name}_{page}", args=args)
            response = chinese_staff.get(url)
            assert response.status_code == 200, url
            html = response.content.decode()
            assert '<html lang="zh-hans"' in html, url
            problems += [f"{meta.label} {page}: {label!r}" for label in english_labels(html)]
    assert not problems, "English labels in the zh-Hans admin:\n" + "\n".join(problems)
