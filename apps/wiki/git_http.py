"""``git clone http://HOST/wiki/<team id>.git``: the wiki over git's smart HTTP, read-only
(issue 9; DESIGN 3.7, 4).

Only ``Authorization: Bearer <personal API token>`` authenticates (never the session cookie,
so no CSRF either), and the token's user must be a member of the team, any role. Everyone else
(no token, a bad token, another team, an unknown team) and a wiki with no commits yet get the
same ``404`` as a missing repository. Pushing is refused: ``403`` for a member.

Two requests exist, both answered by ``git http-backend`` (a CGI program, run as an asyncio
subprocess and streamed back):

- ``GET info/refs?service=git-upload-pack`` (the ref advertisement);
- ``POST git-upload-pack`` (the pack), with a body of at most :data:`BODY_MAX` bytes.

Nothing from the request reaches the backend except those fixed paths, the validated team id,
the method, the content type and encoding, and ``Git-Protocol: version=2``
(https://git-scm.com/docs/git-http-backend, "ENVIRONMENT"; https://git-scm.com/docs/gitprotocol-http).
The backend runs with no system or global configuration, no hooks, no dumb file serving and no
receive-pack, whatever the repository's own configuration says.

At most ``CONFAB["WIKI_GIT_BACKENDS"]`` backends run in a process at once: each packs objects
at full speed on a core, so more would starve the rooms on the same loop. A request beyond
waits for one to end, up to :data:`SLOT_WAIT_S`, and only then answers ``503`` with
``Retry-After`` (git gives up on a 503: "RPC failed"), so a team cloning together is served in
turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from apps.accounts.auth import bearer_token
from apps.accounts.models import User
from apps.accounts.services import aapi_token_authenticate
from apps.common.errors import ApplicationError
from apps.engine.gitconfig import command_line_config
from apps.engine.wiki import WikiError
from apps.wiki.selectors import awiki_membership
from apps.wiki.stores import store_for

__all__ = ["BODY_MAX", "SLOT_WAIT_S", "git_smart_http"]

logger = logging.getLogger(__name__)

BODY_MAX = 10 * 1024 * 1024
"""The largest request body (a fetch's wants and haves) the backend is given."""

SLOT_WAIT_S = 30.0
"""How long a request waits for a free backend before it answers 503."""

UPLOAD_PACK = "git-upload-pack"
RECEIVE_PACK = "git-receive-pack"
_HEADER_TIMEOUT_S = 30.0  # until the backend has answered its CGI headers
_IDLE_TIMEOUT_S = 60.0  # between two chunks of its output
_CHUNK = 64 * 1024
_HEADER_MAX = 16 * 1024
_PROTOCOL_V2 = re.compile(r"\Aversion=2\Z")
_PASSED_HEADERS = ("Cache-Control", "Expires", "Pragma")
_CONFIG = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.attributesFile": "/dev/null",
    "protocol.allow": "never",
    "http.getanyfile": "false",  # no dumb-protocol file serving
    "http.uploadpack": "true",
    "http.receivepack": "false",  # also refused before the backend runs
    "uploadpack.allowFilter": "true",  # partial clones (--filter=blob:none)
    "uploadpack.allowAnySHA1InWant": "false",
    "pack.threads": "1",
    "gc.auto": "0",
}
_RETRY_AFTER_S = 5
_home: Path | None = None


@csrf_exempt
async def git_smart_http(request: HttpRequest, team_id: int, rest: str) -> HttpResponse:
    """One smart-HTTP request for the wiki of ``team_id`` (the URL's ``<int>``)."""
    service = _service(request, rest)
    if service is None:
        return _missing()
    user = await aapi_token_authenticate(bearer_token(request.headers.get("Authorization")))
    if user is None:
        return _missing()
    try:
        membership = await awiki_membership(user=user, team_id=team_id)
    except ApplicationError:
        return _missing()
    if service == RECEIVE_PACK:
        return HttpResponse("The wiki is read-only over git: edit it in the browser or over "
                            "the REST API.\n", status=403, content_type="text/plain")
    store = store_for(membership.team)
    try:
        head = await asyncio.to_thread(store.head)
    except WikiError as error:
        logger.warning("wiki %s unavailable for git: %s", team_id, error.message)
        return _unavailable()
    if head is None:
        return _missing()  # git http-backend would advertise an empty repository
    body = _body(request) if request.method == "POST" else b""
    if body is None:
        return HttpResponse("Request too large.\n", status=413, content_type="text/plain")
    slot = await _slots.take(SLOT_WAIT_S)
    if slot is None:
        return _unavailable(retry_after_s=_RETRY_AFTER_S)
    try:
        return await _backend(request, user, store.path, rest, body, slot)
    except BaseException:
        _slots.give_back(slot)
        raise


class _Slots:
    """The backends this process may run at once (``CONFAB["WIKI_GIT_BACKENDS"]``). A slot is
    taken before its backend starts, so two requests never both see the last one free, and
    given back when the backend is reaped or its response closed, whichever comes first."""

    def __init__(self) -> None:
        self._taken: set[object] = set()
        self._waiting: set[asyncio.Future[None]] = set()

    async def take(self, wait_s: float) -> object | None:
        """A slot (a token for :meth:`give_back`), waiting up to ``wait_s`` seconds for one
        to be given back; None when none was."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while len(self._taken) >= settings.CONFAB["WIKI_GIT_BACKENDS"]:
            woken = loop.create_future()
            self._waiting.add(woken)
            try:
                async with asyncio.timeout_at(deadline):
                    await woken
            except TimeoutError:
                return None
            finally:
                self._waiting.discard(woken)
        slot = object()
        self._taken.add(slot)
        return slot

    def give_back(self, slot: object) -> None:
        """End ``slot`` (again is a no-op) and wake every request waiting for one: the first
        to run takes it, the others wait again. Safe from any thread: Django closes a
        response in a worker thread."""
        if slot in self._taken:
            self._taken.discard(slot)
            for woken in list(self._waiting):
                woken.get_loop().call_soon_threadsafe(_wake, woken)


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():  # its wait may have timed out meanwhile
        woken.set_result(None)


_slots = _Slots()


def _service(request: HttpRequest, rest: str) -> str | None:
    """The service a request of the allow-list asks for; None for anything else."""
    if rest == "info/refs" and request.method == "GET":
        query = request.META.get("QUERY_STRING", "")
        return {f"service={UPLOAD_PACK}": UPLOAD_PACK,
                f"service={RECEIVE_PACK}": RECEIVE_PACK}.get(query)
    if rest in (UPLOAD_PACK, RECEIVE_PACK) and request.method == "POST":
        return rest
    return None


def _missing() -> HttpResponse:
    """The one answer for "no such repository" and "not yours"."""
    return HttpResponse("Repository not found.\n", status=404, content_type="text/plain")


def _unavailable(*, retry_after_s: int | None = None) -> HttpResponse:
    response = HttpResponse("The wiki is unavailable; try again.\n", status=503,
                            content_type="text/plain")
    if retry_after_s is not None:
        response["Retry-After"] = str(retry_after_s)
    return response


def _body(request: HttpRequest) -> bytes | None:
    """The request body, or None when it is over :data:`BODY_MAX`."""
    with contextlib.suppress(ValueError):
        if int(request.META.get("CONTENT_LENGTH") or 0) > BODY_MAX:
            return None
    data = request.read(BODY_MAX + 1)
    return None if len(data) > BODY_MAX else data


def _environment(request: HttpRequest, user: User, repository: Path, rest: str,
                 body: bytes) -> dict[str, str]:
    """The CGI environment of ``git http-backend``: built from scratch, nothing inherited."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(_empty_home()),
        "XDG_CONFIG_HOME": "/nonexistent",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PROJECT_ROOT": str(repository.parent),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": f"/{repository.name}/{rest}",
        "REQUEST_METHOD": request.method or "GET",
        "QUERY_STRING": request.META.get("QUERY_STRING", "") if rest == "info/refs" else "",
        "CONTENT_TYPE": request.META.get("CONTENT_TYPE", ""),
        "CONTENT_LENGTH": str(len(body)),
        "REMOTE_USER": f"user-{user.pk}",
        "REMOTE_ADDR": request.META.get("REMOTE_ADDR", ""),
    } | command_line_config(_CONFIG)
    if encoding := request.headers.get("Content-Encoding"):
        env["HTTP_CONTENT_ENCODING"] = encoding
    if _PROTOCOL_V2.match(request.headers.get("Git-Protocol", "")):
        env["GIT_PROTOCOL"] = "version=2"
    return env


def _empty_home() -> Path:
    """A private empty directory for the backend's ``HOME`` (made once per process)."""
    global _home
    if _home is None:
        _home = Path(tempfile.mkdtemp(prefix="confab-git-home-"))
    return _home


async def _backend(request: HttpRequest, user: User, repository: Path, rest: str,
                   body: bytes, slot: object) -> HttpResponse:
    """Run ``git http-backend`` in ``slot``; answer its status and headers, then stream its
    output. The slot is given back when the backend is reaped."""
    process = await asyncio.create_subprocess_exec(
        "git", "http-backend", cwd=repository.parent,
        env=_environment(request, user, repository, rest, body),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    backend = _Backend(process, slot, asyncio.create_task(_feed(process, body)),
                       asyncio.create_task(_drain_errors(process)))
    try:
        async with asyncio.timeout(_HEADER_TIMEOUT_S):
            headers, first = await _cgi_headers(process)
    except (TimeoutError, ValueError) as error:
        await backend.end()
        logger.warning("git http-backend gave no usable headers: %s", error or "timeout")
        return _unavailable()
    except BaseException:  # cancelled: the client went away
        await backend.end()
        raise
    status = int((headers.get("status") or "200").split()[0])
    response = _BackendResponse(
        backend, _stream(backend, first), status=status,
        content_type=headers.get("content-type", "application/octet-stream"))
    for name in _PASSED_HEADERS:
        if value := headers.get(name.lower()):
            response[name] = value
    return response


@dataclass(frozen=True, slots=True)
class _Backend:
    """A running ``git http-backend``, the slot it holds and its stdin and stderr tasks."""

    process: asyncio.subprocess.Process
    slot: object
    feeding: asyncio.Task[None]
    errors: asyncio.Task[None]

    def kill(self) -> None:
        """Kill the process if it still runs and give its slot back (from any thread)."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        _slots.give_back(self.slot)

    async def end(self, *, kill: bool = True) -> None:
        """Reap the process (killed first unless it is done writing), give its slot back and
        end the helper tasks."""
        if kill:
            self.kill()
        try:
            async with asyncio.timeout(5):
                await self.process.wait()
        except TimeoutError:
            self.kill()
            await self.process.wait()
        finally:
            _slots.give_back(self.slot)
            for task in (self.feeding, self.errors):
                task.cancel()
            await asyncio.gather(self.feeding, self.errors, return_exceptions=True)


class _BackendResponse(StreamingHttpResponse):
    """A streamed answer that kills its backend when closed before the stream ran to its end
    (Django closes every response; a stream never started has no ``finally`` to run)."""

    def __init__(self, backend: _Backend, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._backend = backend

    def close(self) -> None:
        self._backend.kill()
        super().close()


async def _feed(process: asyncio.subprocess.Process, body: bytes) -> None:
    """Write the request body to the backend's stdin and close it."""
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if body:
            process.stdin.write(body)
            await process.stdin.drain()
        process.stdin.close()
        await process.stdin.wait_closed()


async def _drain_errors(process: asyncio.subprocess.Process) -> None:
    """Log what the backend says on stderr (a client that hung up, a broken repository)."""
    assert process.stderr is not None
    text = (await process.stderr.read(_HEADER_MAX)).decode("utf-8", "replace").strip()
    await process.stderr.read()  # discard the rest, so the backend never blocks on it
    if text:
        logger.info("git http-backend: %s", text)


async def _cgi_headers(process: asyncio.subprocess.Process) -> tuple[dict[str, str], bytes]:
    """The CGI response headers (lower-case names) and the body bytes read with them."""
    assert process.stdout is not None
    buffer = b""
    while True:
        for end in (b"\r\n\r\n", b"\n\n"):
            head, found, rest = buffer.partition(end)
            if found:
                return _parse_headers(head), rest
        if len(buffer) > _HEADER_MAX:
            raise ValueError("CGI headers too long")
        chunk = await process.stdout.read(_CHUNK)
        if not chunk:
            raise ValueError("the backend ended before its headers")
        buffer += chunk


def _parse_headers(head: bytes) -> dict[str, str]:
    headers = {}
    for line in head.decode("latin-1").splitlines():
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    return headers


async def _stream(backend: _Backend, first: bytes) -> AsyncIterator[bytes]:
    """The backend's output after its headers. The process ends with the response: killed when
    the client goes away or the backend stalls."""
    stdout = backend.process.stdout
    assert stdout is not None
    finished = False
    try:
        if first:
            yield first
        while True:
            async with asyncio.timeout(_IDLE_TIMEOUT_S):
                chunk = await stdout.read(_CHUNK)
            if not chunk:
                break
            yield chunk
        finished = True
    finally:
        await backend.end(kill=not finished)
