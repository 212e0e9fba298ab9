"""The SSRF guard for outgoing HTTP: WebFetch now, HTTP MCP servers later (DESIGN 4, "SSRF").

The rules, in the order they apply to every request (redirects included):

1. Only ``http`` and ``https`` URLs, with a host and without credentials.
2. The host is resolved **once** (``getaddrinfo``), and **every** address it resolves to is
   checked: one refused address refuses the URL (a name that mixes public and private answers is
   a rebinding attempt). IPv4 addresses embedded in IPv6 ones are unwrapped from the address's
   bits and checked too: IPv4-mapped ``::ffff:a.b.c.d``, IPv4-translated ``::ffff:0:a.b.c.d``,
   IPv4-compatible ``::a.b.c.d``, NAT64 ``64:ff9b::/96`` (RFC 6052), 6to4 ``2002::/16``
   (RFC 3056) and Teredo ``2001::/32`` (RFC 4380).
3. Refused: unspecified, loopback, private (RFC 1918, ``fc00::/7``), shared CGNAT space
   ``100.64.0.0/10`` (RFC 6598), link-local (``169.254.0.0/16`` with the cloud metadata address
   ``169.254.169.254``; ``fe80::/10``), multicast, broadcast, documentation and benchmarking
   ranges, the reserved ``240.0.0.0/4``, the rest of what the IANA special-purpose registries
   mark not globally reachable (local-use NAT64 ``64:ff9b:1::/48`` whatever it carries, 6to4
   and Teredo, whose relays are not globally reachable: RFC 7526), and every IPv6 address
   outside global unicast ``2000::/3`` that is not a mapped, translated or NAT64 form of a
   public IPv4 address.

The tables are ours, not ``ipaddress``'s ``is_global``/``is_private``: those changed within 3.12
and 3.13 (3.12.1 calls 6to4 and ``64:ff9b:1::/48`` global; 3.13 judges ``::ffff:a.b.c.d`` by the
IPv4 address), and a guard must decide the same on every interpreter. Sources: the IANA IPv4 and
IPv6 Special-Purpose Address Registries (https://www.iana.org/assignments/iana-ipv4-special-
registry, .../iana-ipv6-special-registry) and the IPv6 address space registry (RFC 4291 2.4).
4. The connection goes to the checked address itself (the URL's host is replaced by it), never to
   a second resolution of the name, so DNS rebinding between check and connect cannot work; the
   ``Host`` header keeps the name, and TLS sends it as SNI and verifies the certificate against
   it (httpcore's ``sni_hostname`` request extension).
5. Proxy settings in the environment are ignored (``trust_env=False``): a proxy would resolve the
   name again, out of our sight.

``NetworkPolicy.allow_private_network`` (a host setting, e.g. for tests on loopback) lifts the
address check of rule 3 only; ``allowed_networks`` are exceptions an operator trusts (an
internal documentation server, or a test's own loopback address).

:class:`GuardedTransport` applies rules 1-5 to every request of an ``httpx2`` client;
:func:`guarded_client` builds such a client; :func:`fetch` is a GET that follows at most five
redirects by hand (each one checked again by the transport) with a size cap.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import Any

import httpx2

from apps.engine.errors import ToolError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "Fetched",
    "GuardedTransport",
    "IPAddress",
    "NetworkPolicy",
    "Resolver",
    "ResponseTooLarge",
    "Target",
    "UrlRefused",
    "address_refusal",
    "check_url",
    "embedded_ipv4",
    "fetch",
    "guarded_client",
    "system_resolver",
]

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
"""``(host, port) -> addresses``: the one resolution of a host name (tests inject their own)."""

DEFAULT_MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

_V4_REFUSED: tuple[tuple[IPv4Network, str], ...] = tuple(
    (IPv4Network(net), why) for net, why in (
        ("0.0.0.0/8", "an unspecified ('this network') address"),  # RFC 1122 3.2.1.3
        ("10.0.0.0/8", "a private address"),  # RFC 1918
        ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),  # RFC 6598
        ("127.0.0.0/8", "a loopback address"),  # RFC 1122
        ("169.254.0.0/16", "a link-local address (cloud metadata lives here)"),  # RFC 3927
        ("172.16.0.0/12", "a private address"),  # RFC 1918
        ("192.0.0.0/24", "a reserved (IETF protocol assignment) address"),  # RFC 6890
        ("192.0.2.0/24", "a documentation address"),  # RFC 5737
        ("192.88.99.0/24", "a 6to4 relay anycast address (deprecated)"),  # RFC 7526
        ("192.168.0.0/16", "a private address"),  # RFC 1918
        ("198.18.0.0/15", "a benchmarking address"),  # RFC 2544
        ("198.51.100.0/24", "a documentation address"),  # RFC 5737
        ("203.0.113.0/24", "a documentation address"),  # RFC 5737
        ("224.0.0.0/4", "a multicast address"),  # RFC 5771
        ("255.255.255.255/32", "the broadcast address"),  # RFC 919
        ("240.0.0.0/4", "a reserved address"),  # RFC 1112
    )
)
_V6_REFUSED: tuple[tuple[IPv6Network, str], ...] = tuple(
    (IPv6Network(net), why) for net, why in (
        ("::/128", "the unspecified address"),  # RFC 4291
        ("::1/128", "a loopback address"),  # RFC 4291
        ("64:ff9b:1::/48", "a local-use NAT64 address"),  # RFC 8215
        ("100::/64", "a discard-only address"),  # RFC 6666
        ("2001::/32", "a Teredo address (its relays are not globally reachable)"),  # RFC 4380
        ("2001::/23", "a reserved (IETF protocol assignment) address"),  # RFC 2928
        ("2001:db8::/32", "a documentation address"),  # RFC 3849
        ("2002::/16", "a 6to4 address (its relays are not globally reachable)"),  # RFC 7526
        ("3fff::/20", "a documentation address"),  # RFC 9637
        ("fc00::/7", "a private (unique local) address"),  # RFC 4193
        ("fe80::/10", "a link-local address"),  # RFC 4291
        ("fec0::/10", "a site-local address"),  # RFC 3879
        ("ff00::/8", "a multicast address"),  # RFC 4291
    )
)
_GLOBAL_UNICAST = IPv6Network("2000::/3")  # RFC 4291 2.4; the rest is reserved or unassigned
_MAPPED = IPv6Network("::ffff:0:0/96")  # RFC 4291 2.5.5.2
_TRANSLATED = IPv6Network("::ffff:0:0:0/96")  # RFC 2765 (SIIT)
_NAT64 = IPv6Network("64:ff9b::/96")  # RFC 6052
_COMPATIBLE = IPv6Network("::/96")  # RFC 4291 2.5.5.1, deprecated
_SIXTOFOUR = IPv6Network("2002::/16")  # RFC 3056: 2002:a.b.c.d::/48
_TEREDO = IPv6Network("2001::/32")  # RFC 4380 4: server in bits 32-63, client inverted in 96-127
_CARRIERS = (_MAPPED, _TRANSLATED, _NAT64)  # judged by the IPv4 address they carry


class UrlRefused(ToolError):
    """The guard refuses a URL: ``url`` as given, ``reason`` (a sentence) and, when an address
    was the cause, ``address``."""

    def __init__(self, url: str, reason: str, address: IPAddress | None = None) -> None:
        super().__init__(f"Refused to fetch {url}: {reason}")
        self.url = url
        self.reason = reason
        self.address = address


class ResponseTooLarge(ToolError):
    """A response body passed ``limit`` bytes; the download was stopped there."""

    def __init__(self, url: str, limit: int) -> None:
        super().__init__(f"The response from {url} is larger than {limit // (1024 * 1024)} MB; "
                         "the download was stopped.")
        self.url = url
        self.limit = limit


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    """Which addresses outgoing requests may reach: see the module docstring (rule 3)."""

    allow_private_network: bool = False
    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def build(cls, *, allow_private_network: bool = False,
              allowed_networks: Iterable[str | IPNetwork] = ()) -> NetworkPolicy:
        """A policy from settings; networks may be strings ("10.1.2.3/32")."""
        nets = tuple(ipaddress.ip_network(n) if isinstance(n, str) else n
                     for n in allowed_networks)
        return cls(allow_private_network, nets)

    def refusal(self, address: IPAddress) -> str | None:
        """Why ``address`` may not be reached, or None when it may."""
        if self.allow_private_network or any(address in n for n in self.allowed_networks):
            return None
        return address_refusal(address)


def embedded_ipv4(address: IPv6Address) -> list[IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, read from its bits: mapped, translated,
    compatible, NAT64, 6to4 and both Teredo ones (server and client). Empty for a plain IPv6
    address."""
    bits = int(address)
    low32 = IPv4Address(bits & 0xFFFFFFFF)
    if any(address in network for network in _CARRIERS):
        return [low32]
    if address in _COMPATIBLE and bits > 1:  # ``::`` and ``::1`` are themselves
        return [low32]
    if address in _SIXTOFOUR:
        return [IPv4Address((bits >> 80) & 0xFFFFFFFF)]
    if address in _TEREDO:
        return [IPv4Address((bits >> 64) & 0xFFFFFFFF), IPv4Address(~bits & 0xFFFFFFFF)]
    return []


def _shown(address: IPAddress) -> str:
    """``address`` as text, a mapped one as ``::ffff:a.b.c.d`` (RFC 5952 5) on every Python
    (3.12 prints ``::ffff:7f00:1``, 3.13 the dotted form)."""
    if isinstance(address, IPv6Address) and address in _MAPPED:
        return f"::ffff:{IPv4Address(int(address) & 0xFFFFFFFF)}"
    return str(address)


def _own_refusal(address: IPAddress) -> str | None:
    """The refusal of one address by the tables, unwrapping aside."""
    table = _V4_REFUSED if isinstance(address, IPv4Address) else _V6_REFUSED
    for network, why in table:
        if address in network:
            return why
    if isinstance(address, IPv6Address) and address not in _GLOBAL_UNICAST and not any(
            address in network for network in _CARRIERS):
        return "a reserved or non-public address (not global unicast)"
    return None


def address_refusal(address: IPAddress) -> str | None:
    """Why a public-only policy refuses ``address`` (an IPv4 address embedded in an IPv6 one
    included), or None when it is a public address. The same answer on every Python version."""
    if isinstance(address, IPv6Address):
        for inner in embedded_ipv4(address):
            why = _own_refusal(inner)
            if why is not None:
                return f"{inner} embedded in {_shown(address)} is {why}"
    return _own_refusal(address)


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """Every TCP address of ``host`` from the system resolver, in its order, without repeats.
    Raises ``socket.gaierror`` when the name does not resolve."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    addresses: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


@dataclass(frozen=True, slots=True)
class Target:
    """A checked URL: ``url``, ``host`` (ASCII, IDNA-encoded: the ``Host`` and TLS name) and the
    checked ``addresses`` to connect to, in resolver order."""

    url: httpx2.URL
    host: str
    addresses: tuple[IPAddress, ...]


def _parse(url: str | httpx2.URL) -> httpx2.URL:
    """The URL parsed, with rule 1 applied; UrlRefused otherwise."""
    try:
        parsed = url if isinstance(url, httpx2.URL) else httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError) as e:
        raise UrlRefused(str(url), f"it is not a valid URL ({e})") from e
    if parsed.scheme not in ("http", "https"):
        raise UrlRefused(str(url), "only http and https URLs are fetched")
    if not parsed.raw_host:
        raise UrlRefused(str(url), "the URL has no host")
    if parsed.userinfo:
        raise UrlRefused(str(url), "URLs with credentials are not fetched")
    return parsed


def _literal(host: str) -> IPAddress | None:
    """The address ``host`` spells, or None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def _resolve(parsed: httpx2.URL, host: str, resolver: Resolver) -> list[IPAddress]:
    """The addresses of ``host``: an address literal itself, else the resolver's answer."""
    if (literal := _literal(host)) is not None:
        return [literal]
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        addresses = await resolver(host, port)
    except OSError as e:
        raise UrlRefused(str(parsed), f"the host {host} could not be resolved ({e})") from e
    if not addresses:
        raise UrlRefused(str(parsed), f"the host {host} has no address")
    return addresses


async def check_url(url: str | httpx2.URL, policy: NetworkPolicy,
                    resolver: Resolver | None = None) -> Target:
    """Apply rules 1-3 to ``url``: parse, resolve once, check every address.

    Returns the :class:`Target` to connect to; raises :class:`UrlRefused` (a ToolError) with the
    reason otherwise.
    """
    parsed = _parse(url)
    host = parsed.raw_host.decode("ascii")
    addresses = await _resolve(parsed, host, resolver or system_resolver)
    for address in addresses:
        why = policy.refusal(address)
        if why is not None:
            where = ("it is" if _literal(host) == address
                     else f"{host} resolves to {_shown(address)},")
            raise UrlRefused(str(parsed), f"{where} {why}", address)
    return Target(parsed, host, tuple(addresses))


def _pinned(request: httpx2.Request, target: Target, address: IPAddress) -> httpx2.Request:
    """``request`` sent to ``address``: the URL carries the address, while the ``Host`` header
    (already set from the original URL) and the TLS server name keep the host name."""
    extensions = {**request.extensions, "sni_hostname": target.host}
    return httpx2.Request(request.method, request.url.copy_with(host=str(address)),
                          headers=request.headers, stream=request.stream,
                          extensions=extensions)


class GuardedTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport that checks every request with :func:`check_url` and connects to
    the checked addresses only (in order, the next one when a connection fails).

    ``verify``: TLS verification as httpx2 takes it (True, a CA bundle path or an SSLContext).
    Each host name gets its own connection pool, so a connection verified for one name is never
    reused for another name that shares its address.
    """

    def __init__(self, policy: NetworkPolicy, *, resolver: Resolver | None = None,
                 verify: Any = True) -> None:
        self._policy = policy
        self._resolver = resolver
        self._verify = verify
        self._pools: dict[str, httpx2.AsyncHTTPTransport] = {}

    def _pool(self, host: str) -> httpx2.AsyncHTTPTransport:
        if host not in self._pools:
            self._pools[host] = httpx2.AsyncHTTPTransport(verify=self._verify, trust_env=False)
        return self._pools[host]

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        target = await check_url(request.url, self._policy, self._resolver)
        pool = self._pool(target.host)
        failure: httpx2.ConnectError | None = None
        for address in target.addresses:
            try:
                return await pool.handle_async_request(_pinned(request, target, address))
            except httpx2.ConnectError as e:  # nothing was sent: the next address may answer
                failure = e
        assert failure is not None
        raise failure

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()
        self._pools.clear()


def guarded_client(policy: NetworkPolicy, *, resolver: Resolver | None = None,
                   timeout_s: float = 30.0, verify: Any = True,
                   headers: dict[str, str] | None = None) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` whose every request goes through :class:`GuardedTransport`,
    with environment proxies ignored and redirects not followed (callers check each hop)."""
    return httpx2.AsyncClient(
        transport=GuardedTransport(policy, resolver=resolver, verify=verify),
        trust_env=False, follow_redirects=False, headers=headers,
        timeout=httpx2.Timeout(timeout_s, connect=min(timeout_s, 10.0)))


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetched response: final ``url`` (after redirects), ``status``, ``content_type`` (the
    media type, lower case, no parameters; "" when absent), ``charset`` (or None), ``body``."""

    url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes


async def _read_capped(response: httpx2.Response, max_bytes: int) -> bytes:
    """The (decoded) body, or ResponseTooLarge as soon as it passes ``max_bytes``."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise ResponseTooLarge(str(response.url), max_bytes)
    body = bytearray()
    async for chunk in response.aiter_bytes():  # decompressed: a zip bomb stops at the cap
        body += chunk
        if len(body) > max_bytes:
            raise ResponseTooLarge(str(response.url), max_bytes)
    return bytes(body)


def _redirect(response: httpx2.Response) -> httpx2.URL | None:
    """Where a redirect response points (resolved against its URL), or None."""
    location = response.headers.get("location")
    if response.status_code not in _REDIRECT_STATUSES or not location:
        return None
    try:
        return response.url.join(location)
    except httpx2.InvalidURL as e:
        raise UrlRefused(location, f"the redirect target is not a valid URL ({e})") from e


def _fetched(response: httpx2.Response, body: bytes) -> Fetched:
    content_type = response.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    return Fetched(str(response.url), response.status_code, media_type,
                   response.charset_encoding, body)


async def fetch(url: str, *, policy: NetworkPolicy, resolver: Resolver | None = None,
                max_bytes: int = DEFAULT_MAX_BYTES, timeout_s: float = 30.0,
                max_redirects: int = MAX_REDIRECTS, verify: Any = True,
                headers: dict[str, str] | None = None) -> Fetched:
    """GET ``url`` under ``policy``; follow up to ``max_redirects`` redirects, each checked.

    ``timeout_s`` bounds every connect and read and also the whole fetch. Raises UrlRefused,
    ResponseTooLarge (past ``max_bytes`` of body), or ToolError for too many redirects, a
    timeout or a network failure.
    """
    current = _parse(url)
    try:
        async with asyncio.timeout(timeout_s), guarded_client(
                policy, resolver=resolver, timeout_s=timeout_s, verify=verify,
                headers=headers) as client:
            for _ in range(max_redirects + 1):
                async with client.stream("GET", current) as response:
                    target = _redirect(response)
                    if target is None:
                        return _fetched(response, await _read_capped(response, max_bytes))
                current = _parse(target)  # rule 1 again, with the target in the message
    except TimeoutError as e:
        raise ToolError(f"Fetching {url} timed out after {timeout_s:g} s.") from e
    except httpx2.HTTPError as e:
        raise ToolError(f"Fetching {current} failed: {type(e).__name__}: {e}") from e
    raise ToolError(f"Fetching {url} gave more than {max_redirects} redirects; stopped.")
