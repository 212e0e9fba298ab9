"""Fixtures of the agent's wiki tools in real runs: the consumer tests' ASGI application, run
worker and offline model (fakellm over loopback), with each test's wiki repositories and
workspaces in directories of its own, and a few helpers to read what a run did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from apps.accounts.models import Team, User
from apps.engine.wiki import Author, WikiStore
from apps.wiki.stores import store_for
from tests.consumers.conftest import (  # noqa: F401  (fixtures)
    connect,
    conversation,
    fresh_channel_layer,
    model,
    model_requests,
    script,
    worker,
)
from tests.integration.api.streams import body
from tests.integration.personas import mint_token

SEEDER = Author(name="Seeder", email="seed@users.confab.invalid")


@pytest.fixture(autouse=True)
def data_dirs(settings: Any, tmp_path: Path) -> Path:
    """A WIKI_DIR and a WORKSPACES_DIR for this test alone."""
    settings.WIKI_DIR = tmp_path / "wiki"
    settings.WORKSPACES_DIR = tmp_path / "workspaces"
    return tmp_path


def seed(team: Team, files: dict[str, str]) -> WikiStore:
    """Commit ``files`` to ``team``'s wiki directly (as an import would); its store."""
    store = store_for(team)
    store.commit_files(files, message="Seed", author=SEEDER)
    return store


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A script step: the model calls ``name`` with ``arguments``."""
    return {"tool_call": {"name": name, "arguments": arguments}}


@sync_to_async
def export(user: User, conversation_id: int, kind: str = "json") -> Any:
    """The conversation's export with ``user``'s API token (JSON parsed, Markdown as text)."""
    client = Client(headers={"Authorization": f"Bearer {mint_token(user)}"})
    response = client.get(f"/api/conversations/{conversation_id}/export.{kind}")
    assert response.status_code == 200
    text = body(response)
    return json.loads(text) if kind == "json" else text


def results(client: Any) -> list[dict[str, Any]]:
    """Every tool_result event the client has seen, in order."""
    return [f["event"] for f in client.events if f["event"]["kind"] == "tool_result"]


def text_of(result: dict[str, Any]) -> str:
    content = result["result"]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
