"""NUL (U+0000) in a REST request (issue 19 review): PostgreSQL cannot store it, so every
string the API reads refuses it with ``invalid`` in the person's language, as the socket's
frames do (``bad_frame``), and nothing is stored. The walk over every operation's parameters
is what keeps a new field from forgetting it (tests/postgres/test_nul.py: the same requests
against PostgreSQL)."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator

import pytest
from pydantic import BaseModel, ValidationError

from apps.api.api import api
from apps.rooms.models import Conversation, Message, Room

pytestmark = pytest.mark.django_db

NUL_TEXT = "a\x00b"


def _types(annotation: object) -> Iterator[object]:
    """The types ``annotation`` admits: Optional, unions and Annotated unwrapped."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        args = typing.get_args(annotation)
        for arg in args[:1] if origin is typing.Annotated else args:
            yield from _types(arg)
    else:
        yield annotation


def _string_leaves(model: type[BaseModel], prefix: tuple[str, ...] = ()
                   ) -> Iterator[tuple[str, ...]]:
    """The path (as the model reads its input) of every field of ``model`` that takes a
    string, nested schemas walked."""
    for name, field in model.model_fields.items():
        key = (*prefix, field.alias or name)
        admitted = list(_types(field.annotation))
        nested = [t for t in admitted if isinstance(t, type) and issubclass(t, BaseModel)]
        for schema in nested:
            yield from _string_leaves(schema, key)
        if str in admitted:
            yield key


def _holding_nul(path: tuple[str, ...]) -> dict:
    data: dict = {path[-1]: NUL_TEXT}
    for key in reversed(path[:-1]):
        data = {key: data}
    return data


def _operations() -> Iterator[tuple[str, type[BaseModel]]]:
    for _prefix, router in api._routers:
        for path, view in router.path_operations.items():
            for operation in view.operations:
                for model in operation.models:
                    yield f"{'/'.join(operation.methods)} {path}", model


def test_every_string_every_operation_reads_refuses_nul() -> None:
    accepted, checked = [], 0
    for where, model in _operations():
        for path in _string_leaves(model):
            checked += 1
            try:
                model.model_validate(_holding_nul(path))
            except ValidationError as error:
                if any(tuple(e["loc"]) == path and "NUL" in e["msg"] for e in error.errors()):
                    continue
            accepted.append(f"{where}: {'.'.join(path)}")
    assert checked >= 25  # the walk found the strings (titles, texts, wiki paths, queries...)
    assert not accepted, "strings that take NUL:\n" + "\n".join(accepted)


def _post(client, path: str, body: dict, method: str = "post", **headers):
    return getattr(client, method)(path, data=json.dumps(body), content_type="application/json",
                                   **headers)


def test_titles_names_edits_and_search_with_nul_are_invalid_and_store_nothing(
        token_client, alice, acme, room, conversation) -> None:
    client = token_client(alice)
    said = Message.objects.create(conversation=conversation, role="user", position=1,
                                  author=alice, author_name=alice.shown_name,
                                  content=[{"type": "text", "text": "hello"}])
    refused = {
        "rename": _post(client, f"/api/conversations/{conversation.pk}",
                        {"title": "a\u0000b"}, "patch"),
        "create conversation": _post(client, f"/api/rooms/{room.pk}/conversations",
                                     {"title": "nul\u0000title"}),
        "create room": _post(client, "/api/rooms", {"team_id": acme.pk,
                                                    "name": "nul\u0000room"}),
        "edit": _post(client, f"/api/conversations/{conversation.pk}/messages/{said.pk}/edit",
                      {"text": "nul\u0000in edit"}),
        "search": client.get("/api/search", {"q": "a\x00b"}),
        "history cursor": client.get(f"/api/conversations/{conversation.pk}/messages",
                                     {"before": "p1.\x00"}),
    }
    for what, response in refused.items():
        assert response.status_code == 400, (what, response.content)
        body = response.json()
        assert body["code"] == "invalid", what
        assert "contains a NUL character, which cannot be stored" in body["message"], what
    assert refused["rename"].json()["message"] == (
        "body.payload.title: Value error, contains a NUL character, which cannot be stored")
    assert Conversation.objects.get(pk=conversation.pk).title == "Plans"
    assert Conversation.objects.count() == 1 and Room.objects.count() == 1
    assert list(Message.objects.values_list("pk", flat=True)) == [said.pk]

    chinese = _post(client, f"/api/conversations/{conversation.pk}", {"title": "a\u0000b"},
                    "patch", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert chinese.status_code == 400 and chinese.json()["code"] == "invalid"
    assert "NUL" in chinese.json()["message"]
    assert "contains a NUL character" not in chinese.json()["message"]  # said in Chinese
