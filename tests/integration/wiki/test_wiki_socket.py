"""The wiki socket ``/ws/teams/<id>/wiki/`` (issue 11, Live) against the real ASGI application
and the in-memory channel layer: what a page hears when someone saves, renames or deletes, and
who may listen (the conversation socket's rules: 4401 signed out or a foreign Origin, 4404 for
anyone outside the team exactly like a team that does not exist, closed when removed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator

from apps.accounts.models import Team, User
from apps.accounts.services import membership_remove
from apps.engine.wiki import WriteResult
from apps.wiki.services import page_delete, page_rename, page_save
from config.asgi import application
from tests.integration.personas import mint_token

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = 10


@pytest.fixture(autouse=True)
def fresh_channel_layer() -> None:
    """A new in-memory layer per test: its queues belong to the test's event loop."""
    channel_layers.backends.clear()


async def connect(user: User | None, team_id: int, *, path: str | None = None,
                  headers: list[tuple[bytes, bytes]] | None = None
                  ) -> tuple[WebsocketCommunicator, dict[str, Any]]:
    """Connect as ``user`` (token auth unless ``headers`` say otherwise); returns the socket and
    its first output: a frame (decoded) or the close message."""
    url = f"/ws/teams/{team_id}/wiki/"
    if path is not None:
        url += f"?path={path}"
    all_headers = list(headers or [])
    if user is not None:
        token = await sync_to_async(mint_token)(user)
        all_headers.append((b"authorization", f"Bearer {token}".encode()))
    socket = WebsocketCommunicator(application, url, headers=all_headers)
    connected, _ = await socket.connect(timeout=TIMEOUT)
    assert connected
    return socket, await first_output(socket, expect_frame=path is not None)


async def first_output(socket: WebsocketCommunicator, *, expect_frame: bool) -> dict[str, Any]:
    # a socket without ?path sends nothing until something changes
    if not expect_frame and await socket.receive_nothing(timeout=0.3):
        return {}
    output = await socket.receive_output(timeout=TIMEOUT)
    return json.loads(output["text"]) if output["type"] == "websocket.send" else output


async def frame(socket: WebsocketCommunicator) -> dict[str, Any]:
    return await socket.receive_json_from(timeout=TIMEOUT)


async def closed_with(socket: WebsocketCommunicator) -> int:
    while True:
        output = await socket.receive_output(timeout=TIMEOUT)
        if output["type"] == "websocket.close":
            return output["code"]


save = sync_to_async(page_save)


async def test_a_reader_gets_the_page_now_then_hears_a_save_at_once(
        acme: Team, alice: User, bob: User, home: WriteResult) -> None:
    socket, now = await connect(alice, acme.pk, path="Home.md")
    assert now == {"type": "wiki_page", "path": "Home.md", "blob": home.blob,
                   "commit": home.commit, "author": "Alice"}
    result = await save(team=acme, by=bob, path="Home.md", content="# Home\n\nBob was here.\n",
                        expected_blob=home.blob, message="Say hello")
    assert await frame(socket) == {"type": "wiki_changed", "path": "Home.md",
                                   "commit": result.commit, "author": "Bob",
                                   "action": "write", "from": None}
    await socket.disconnect()


async def test_renames_and_deletes_are_heard_with_the_old_path(
        acme: Team, alice: User, home: WriteResult) -> None:
    socket, _ = await connect(alice, acme.pk, path="Home.md")
    renamed = await sync_to_async(page_rename)(team=acme, by=alice, path="Home.md",
                                               to="Start.md", expected_blob=home.blob,
                                               message="")
    heard = await frame(socket)
    assert (heard["action"], heard["path"], heard["from"]) == ("rename", "Start.md", "Home.md")
    await sync_to_async(page_delete)(team=acme, by=alice, path="Start.md",
                                     expected_blob=renamed.blob, message="")
    heard = await frame(socket)
    assert (heard["action"], heard["path"]) == ("delete", "Start.md")
    await socket.disconnect()


async def test_a_viewer_listens_too(acme: Team, bob: User, carol: User,
                                    home: WriteResult) -> None:
    socket, now = await connect(carol, acme.pk, path="Home.md")
    assert now["blob"] == home.blob
    await save(team=acme, by=bob, path="Ops.md", content="# Ops\n", expected_blob=None,
               message="")
    assert (await frame(socket))["path"] == "Ops.md"  # the tree hears every page
    await socket.disconnect()


async def test_a_missing_or_refused_path_reads_as_no_page(acme: Team, alice: User,
                                                          home: WriteResult) -> None:
    for path in ("Nope.md", "../etc/passwd.md", "--output=x.md", "_files/x.png", "%E2%80%AE"):
        socket, now = await connect(alice, acme.pk, path=path)
        assert now["type"] == "wiki_page" and now["blob"] is None, (path, now)
        await socket.disconnect()


async def test_cjk_paths_are_heard_as_written(acme: Team, alice: User) -> None:
    path = "运维/部署 手册.md"
    result = await save(team=acme, by=alice, path=path, content="# 部署\n", expected_blob=None,
                        message="")
    socket, now = await connect(alice, acme.pk, path="%E8%BF%90%E7%BB%B4/%E9%83%A8%E7%BD%B2%20"
                                                      "%E6%89%8B%E5%86%8C.md")
    assert (now["path"], now["blob"]) == (path, result.blob)
    await socket.disconnect()


@pytest.mark.parametrize("who", ["nobody", "charlie"])
async def test_outsiders_are_turned_away(who: str, acme: Team, charlie: User,
                                         globex: Team) -> None:
    _, closed = await connect(None if who == "nobody" else charlie, acme.pk, path="Home.md")
    assert closed == {"type": "websocket.close", "code": 4401 if who == "nobody" else 4404}


async def test_another_teams_wiki_answers_like_one_that_does_not_exist(
        acme: Team, charlie: User, globex: Team) -> None:
    _, theirs = await connect(charlie, acme.pk, path="Home.md")
    _, missing = await connect(charlie, 999_999, path="Home.md")
    assert theirs == missing == {"type": "websocket.close", "code": 4404}


async def test_a_team_hears_only_its_own_wiki(acme: Team, alice: User, charlie: User,
                                              globex: Team, home: WriteResult) -> None:
    socket, _ = await connect(alice, acme.pk, path="Home.md")
    await save(team=globex, by=charlie, path="Home.md", content="# Globex\n",
               expected_blob=None, message="")
    assert await socket.receive_nothing(timeout=0.5)
    await socket.disconnect()


async def test_a_cookie_session_needs_an_allowed_origin(acme: Team, alice: User,
                                                        client) -> None:
    await sync_to_async(client.force_login)(alice)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    _, refused = await connect(None, acme.pk, path="Home.md", headers=[cookie])
    assert refused["code"] == 4401
    _, foreign = await connect(None, acme.pk, path="Home.md", headers=[
        cookie, (b"origin", b"https://evil.example")])
    assert foreign["code"] == 4401
    socket, now = await connect(None, acme.pk, path="Home.md", headers=[
        cookie, (b"origin", b"http://localhost:8000")])
    assert now["type"] == "wiki_page"
    await socket.disconnect()


async def test_a_member_removed_from_the_team_is_disconnected(acme: Team, alice: User,
                                                              bob: User) -> None:
    socket, _ = await connect(bob, acme.pk, path="Home.md")
    await sync_to_async(membership_remove)(team=acme, user=bob, by=alice)
    assert await closed_with(socket) == 4404


async def test_the_socket_reads_no_frames(acme: Team, alice: User) -> None:
    socket, _ = await connect(alice, acme.pk, path="Home.md")
    await socket.send_json_to({"type": "send", "text": "hi"})
    error = await frame(socket)
    assert error["type"] == "error" and error["code"] == "bad_frame"
    await socket.disconnect()


async def test_other_wiki_socket_paths_are_not_found(alice: User, acme: Team) -> None:
    token = await sync_to_async(mint_token)(alice)
    for url in (f"/ws/teams/{acme.pk}/wiki", "/ws/teams/abc/wiki/", f"/ws/teams/{acme.pk}/"):
        socket = WebsocketCommunicator(application, url, headers=[
            (b"authorization", f"Bearer {token}".encode())])
        connected, _ = await socket.connect(timeout=TIMEOUT)
        assert connected
        assert await closed_with(socket) == 4404, url


# Rows of the isolation matrix for the socket (DESIGN 4): connect × persona, and what each
# hears when Acme's wiki changes.
SOCKET_MATRIX = {"anonymous": 4401, "charlie": 4404, "carol": None, "bob": None, "alice": None}


@pytest.mark.parametrize("persona", list(SOCKET_MATRIX))
async def test_socket_isolation_matrix(persona: str, acme: Team, alice: User, bob: User,
                                       carol: User, charlie: User, globex: Team,
                                       home: WriteResult) -> None:
    people = {"alice": alice, "bob": bob, "carol": carol, "charlie": charlie}
    socket, first = await connect(people.get(persona), acme.pk, path="Home.md")
    expected = SOCKET_MATRIX[persona]
    if expected is not None:
        assert first == {"type": "websocket.close", "code": expected}
        return
    assert first["type"] == "wiki_page" and first["blob"] == home.blob
    await save(team=acme, by=alice, path="Home.md", content="# Home\n\nv2\n",
               expected_blob=home.blob, message="")
    assert (await frame(socket))["type"] == "wiki_changed"
    await socket.disconnect()
