"""BearerAuth (apps.engine.mcp.bearer) against a loopback server that refuses tokens the way
RFC 6750 says: a 401, or a 403 with ``insufficient_scope``; one renewal per request."""

from __future__ import annotations

import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from apps.engine.mcp.bearer import BearerAuth
from tests.unit.engine.mcp.kit import serve_app

GOOD = "token-2"


class Source:
    """Hands out token-1, then token-2, ... on each renewal; ``give_up`` stops renewing."""

    def __init__(self, first: str | None = "token-1", *, give_up: bool = False) -> None:
        self.current = first
        self.renewals: list[int] = []
        self.give_up = give_up

    async def token(self) -> str | None:
        return self.current

    async def renew(self, refusal: httpx2.Response) -> str | None:
        self.renewals.append(refusal.status_code)
        if self.give_up:
            return None
        self.current = f"token-{len(self.renewals) + 1}"
        return self.current


def _app(refusal: Response) -> Starlette:
    async def endpoint(request: Request) -> Response:
        if request.headers.get("authorization") == f"Bearer {GOOD}":
            return JSONResponse({"ok": True})
        return refusal

    return Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])


async def _post(app: Starlette, source: Source) -> httpx2.Response:
    async with serve_app(app) as origin, httpx2.AsyncClient(auth=BearerAuth(source)) as client:
        return await client.post(f"{origin}/mcp", json={})


UNAUTHORIZED = Response(status_code=401,
                        headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
STEP_UP = Response(status_code=403, headers={
    "WWW-Authenticate": 'Bearer error="insufficient_scope", scope="mcp:write"'})


async def test_a_refused_token_is_renewed_once_and_the_request_sent_again() -> None:
    source = Source()
    response = await _post(_app(UNAUTHORIZED), source)
    assert response.status_code == 200 and source.renewals == [401]


async def test_insufficient_scope_asks_for_a_new_token() -> None:
    source = Source()
    response = await _post(_app(STEP_UP), source)
    assert response.status_code == 200 and source.renewals == [403]


async def test_a_plain_403_is_not_a_token_problem() -> None:
    source = Source()
    response = await _post(_app(Response(status_code=403)), source)
    assert response.status_code == 403 and source.renewals == []


async def test_a_source_that_gives_up_leaves_the_refusal() -> None:
    source = Source(give_up=True)
    response = await _post(_app(UNAUTHORIZED), source)
    assert response.status_code == 401 and source.renewals == [401]


async def test_one_renewal_per_request_even_if_the_new_token_is_refused() -> None:
    source = Source(first=None)  # no token yet: the first request goes without one
    source.renew = _always_bad(source)  # type: ignore[method-assign]
    response = await _post(_app(UNAUTHORIZED), source)
    assert response.status_code == 401 and source.renewals == [401]


def _always_bad(source: Source):
    async def renew(refusal: httpx2.Response) -> str | None:
        source.renewals.append(refusal.status_code)
        return "still-bad"
    return renew


async def test_a_source_without_a_token_sends_none_until_asked() -> None:
    source = Source(first=None)
    response = await _post(_app(UNAUTHORIZED), source)
    assert response.status_code == 200 and source.renewals == [401]  # token-2 after the 401
