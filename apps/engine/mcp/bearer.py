"""Bearer tokens for an HTTP MCP server that renew themselves when the server refuses them.

Source: RFC 6750 section 3 (the ``WWW-Authenticate: Bearer`` challenge: ``invalid_token`` on a
401, ``insufficient_scope`` with the ``scope`` needed on a 403) and the MCP authorization spec
(2025-11-25, "Scope challenge handling": a client that meets ``insufficient_scope`` may ask for
the broader scope and retry). :class:`BearerAuth` is an httpx auth flow: it puts the source's
token on each request, and on such a refusal asks the source once for a new one and sends the
request again. How a token is renewed — a refresh, a new authorization, nothing — and how often
is the source's business (it bounds its own retries).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

import httpx2

__all__ = ["BearerAuth", "TokenSource", "refused"]


class TokenSource(Protocol):
    """Where :class:`BearerAuth` gets its tokens."""

    async def token(self) -> str | None:
        """The access token to send (None: send the request without one)."""
        ...

    async def renew(self, refusal: httpx2.Response) -> str | None:
        """A new access token after the server refused the last one (``refusal``: the 401, or
        the 403 whose challenge says ``insufficient_scope``); None gives up (the refusal
        stands)."""
        ...


def refused(response: httpx2.Response) -> bool:
    """Whether ``response`` refuses the request's token in a way a new token may cure."""
    if response.status_code == 401:
        return True
    challenge = response.headers.get("www-authenticate", "")
    return response.status_code == 403 and "insufficient_scope" in challenge


class BearerAuth(httpx2.Auth):
    """``Authorization: Bearer <token>`` from ``source`` on every request; one renewal and
    resend per request the server refuses (see the module doc)."""

    requires_response_body = False

    def __init__(self, source: TokenSource) -> None:
        self.source = source

    async def async_auth_flow(self, request: httpx2.Request
                              ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self.source.token()
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if not refused(response):
            return
        token = await self.source.renew(response)
        if token is None:
            return
        request.headers["Authorization"] = f"Bearer {token}"
        yield request
