"""``/wiki/<team id>.git/...`` in process (Django's AsyncClient, the real ``git http-backend``):
the clone URL × {anonymous, charlie (other team), carol (viewer), bob (member), alice (owner)},
and every request outside the read-only allow-list. A real ``git clone`` against a real server
is in ``test_git_clone.py``."""

from __future__ import annotations

import asyncio
import os

import psutil
import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from apps.wiki.services import attachment_save
from tests.integration.personas import mint_token

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("close_db_threads")]

PERSONAS = ("anonymous", "charlie", "carol", "bob", "alice")
ADVERTISE = (404, 404, 200, 200, 200)
PUSH = (404, 404, 403, 403, 403)
MISSING_BODY = b"Repository not found.\n"


async def content(response) -> bytes:
    if response.streaming:
        return b"".join([chunk async for chunk in response.streaming_content])
    return response.content


class GitClient:
    """An AsyncClient sending ``headers`` with every request (AsyncClient's own ``headers=``
    would reach the view as ``Http-Authorization``)."""

    def __init__(self, **headers: str) -> None:
        self.client, self.headers = AsyncClient(), headers

    async def get(self, url: str, query: dict | None = None):
        return await self.client.get(url, query, headers=self.headers)

    async def post(self, url: str, body: bytes, content_type: str = "application/x-git-"
                   "upload-pack-request"):
        return await self.client.post(url, body, content_type=content_type,
                                      headers=self.headers)


async def client_as(persona: str, people: dict) -> GitClient:
    if persona == "anonymous":
        return GitClient()
    return GitClient(Authorization=f"Bearer {await _token(people[persona])}")


async def _token(user) -> str:
    return await sync_to_async(mint_token)(user)


@pytest.fixture
def people(alice, bob, carol, charlie, globex) -> dict:
    return {"alice": alice, "bob": bob, "carol": carol, "charlie": charlie}


@pytest.mark.parametrize("persona", PERSONAS)
async def test_the_ref_advertisement_is_for_members_only(acme, home, people, persona) -> None:
    client = await client_as(persona, people)
    response = await client.get(f"/wiki/{acme.pk}.git/info/refs",
                                {"service": "git-upload-pack"})
    expected = ADVERTISE[PERSONAS.index(persona)]
    body = await content(response)
    assert response.status_code == expected, body[:200]
    if expected == 200:
        assert response["Content-Type"] == "application/x-git-upload-pack-advertisement"
        assert b"# service=git-upload-pack" in body
        assert home.commit.encode() in body and b"refs/heads/main" in body
    else:
        assert body == MISSING_BODY
        nobody = await client.get("/wiki/999999.git/info/refs", {"service": "git-upload-pack"})
        assert (nobody.status_code, await content(nobody)) == (404, MISSING_BODY)


@pytest.mark.parametrize("persona", PERSONAS)
async def test_pushing_is_refused(acme, home, people, persona) -> None:
    client = await client_as(persona, people)
    expected = PUSH[PERSONAS.index(persona)]
    advertise = await client.get(f"/wiki/{acme.pk}.git/info/refs",
                                 {"service": "git-receive-pack"})
    pack = await client.post(f"/wiki/{acme.pk}.git/git-receive-pack", b"0000",
                             content_type="application/x-git-receive-pack-request")
    assert (advertise.status_code, pack.status_code) == (expected, expected)


async def test_protocol_v2_is_passed_on_and_a_fetch_streams_a_pack(acme, alice, home) -> None:
    client = GitClient(Authorization=f"Bearer {await _token(alice)}",
                       **{"Git-Protocol": "version=2"})
    refs = await client.get(f"/wiki/{acme.pk}.git/info/refs", {"service": "git-upload-pack"})
    assert b"version 2" in await content(refs)
    request = (_pkt("command=fetch") + _pkt("agent=test") + b"0001"
               + _pkt(f"want {home.commit}") + _pkt("done") + b"0000")
    fetched = await client.post(f"/wiki/{acme.pk}.git/git-upload-pack", request,
                                content_type="application/x-git-upload-pack-request")
    body = await content(fetched)
    assert fetched.status_code == 200, body[:200]
    assert fetched["Content-Type"] == "application/x-git-upload-pack-result"
    assert b"packfile" in body and b"PACK" in body
    assert not [child for child in psutil.Process().children(recursive=True)
                if child.name().startswith("git")]  # the backend was reaped with the stream


async def test_a_session_cookie_is_not_enough(acme, alice, home) -> None:
    client = AsyncClient()
    await client.aforce_login(alice)
    response = await client.get(f"/wiki/{acme.pk}.git/info/refs",
                                {"service": "git-upload-pack"})
    assert response.status_code == 404


async def test_a_wiki_without_commits_is_missing(acme, alice) -> None:
    client = await client_as("alice", {"alice": alice})
    response = await client.get(f"/wiki/{acme.pk}.git/info/refs",
                                {"service": "git-upload-pack"})
    assert (response.status_code, await content(response)) == (404, MISSING_BODY)


@pytest.mark.parametrize(("method", "rest", "query"), [
    ("get", "HEAD", ""),
    ("get", "info/refs", ""),
    ("get", "info/refs", "service=git-upload-pack&x=1"),
    ("get", "info/refs", "service=git-upload-archive"),
    ("get", "objects/info/packs", ""),
    ("get", "config", ""),
    ("get", "git-upload-pack", ""),
    ("post", "info/refs", "service=git-upload-pack"),
    ("get", "../1.git/info/refs", "service=git-upload-pack"),
])
async def test_anything_outside_the_allow_list_is_missing(acme, alice, home, method, rest,
                                                          query) -> None:
    client = await client_as("alice", {"alice": alice})
    url = f"/wiki/{acme.pk}.git/{rest}" + (f"?{query}" if query else "")
    response = await (client.get(url) if method == "get" else client.post(url, b"0000"))
    assert response.status_code == 404


async def test_an_oversized_request_body_is_refused(acme, alice, home, monkeypatch) -> None:
    from apps.wiki import git_http

    monkeypatch.setattr(git_http, "BODY_MAX", 16)
    client = await client_as("alice", {"alice": alice})
    response = await client.post(f"/wiki/{acme.pk}.git/git-upload-pack", b"0" * 17,
                                 content_type="application/x-git-upload-pack-request")
    assert response.status_code == 413


async def test_clones_beyond_the_cap_wait_with_retry_after(acme, alice, settings,
                                                           monkeypatch) -> None:
    from apps.wiki import git_http

    monkeypatch.setattr(git_http, "SLOT_WAIT_S", 0.05)
    client, refs, query, stream = await _one_backend_busy(acme, alice, settings)
    busy = await client.get(refs, query)
    assert (busy.status_code, busy["Retry-After"]) == (503, "5")
    async for _ in stream:
        pass
    again = await client.get(refs, query)
    assert again.status_code == 200 and b"git-upload-pack" in await content(again)


async def test_a_clone_beyond_the_cap_is_served_once_a_backend_ends(acme, alice, settings,
                                                                    monkeypatch) -> None:
    from apps.wiki import git_http

    class CountedSlots(git_http._Slots):
        """The real slots, telling when the second request asks for one."""

        def __init__(self) -> None:
            super().__init__()
            self.asked, self.second = 0, asyncio.Event()

        async def take(self, wait_s: float) -> object | None:
            self.asked += 1
            if self.asked == 2:
                self.second.set()
            return await super().take(wait_s)

    slots = CountedSlots()
    monkeypatch.setattr(git_http, "_slots", slots)
    client, refs, query, stream = await _one_backend_busy(acme, alice, settings)
    waiting = asyncio.create_task(client.get(refs, query))
    await slots.second.wait()  # it waits: the only backend is busy
    assert not waiting.done()
    async for _ in stream:
        pass
    served = await asyncio.wait_for(waiting, 20)
    assert served.status_code == 200 and b"git-upload-pack" in await content(served)


async def _one_backend_busy(acme, alice, settings):
    """A cap of one backend, held by a fetch of a 1 MiB pack read one chunk in (the backend
    waits on its pipe): the client, the ref advertisement's URL and query, the rest of the
    pack's stream."""
    noise = await sync_to_async(attachment_save)(
        team=acme, by=alice, path="_files/noise.png", content=os.urandom(1024 * 1024),
        expected_blob=None, message="")
    settings.CONFAB = {**settings.CONFAB, "WIKI_GIT_BACKENDS": 1}
    client = await client_as("alice", {"alice": alice})
    fetch = _pkt(f"want {noise.commit}") + b"0000" + _pkt("done")
    first = await client.post(f"/wiki/{acme.pk}.git/git-upload-pack", fetch)
    stream = aiter(first.streaming_content)
    await anext(stream)
    return client, f"/wiki/{acme.pk}.git/info/refs", {"service": "git-upload-pack"}, stream


def _pkt(line: str) -> bytes:
    """One pkt-line (https://git-scm.com/docs/gitprotocol-common#_pkt_line_format)."""
    data = (line + "\n").encode()
    return f"{len(data) + 4:04x}".encode() + data
