"""The SSRF guard (apps.engine.tools.net): the address table, resolution and checking of URLs, and
connections that go to the checked address with the original Host and TLS name.

Connections are made only to a real server on 127.0.0.1; names like ``app.test`` resolve through
a resolver the test passes (the guard's injection point for the one resolution it makes), so
a successful request to a name that exists in no DNS proves the guard did not resolve again.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from apps.engine.errors import ToolError
from apps.engine.tools.net import (
    IPAddress,
    NetworkPolicy,
    UrlRefused,
    address_refusal,
    check_url,
    embedded_ipv4,
    fetch,
    guarded_client,
)

from .loopback_http import LoopbackServer, Reply

PUBLIC = NetworkPolicy()
LOOPBACK_ONLY = NetworkPolicy.build(allowed_networks=["127.0.0.1/32"])

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.255", "carrier-grade NAT"),
    ("169.254.169.254", "link-local"),  # cloud metadata
    ("169.254.0.1", "link-local"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.0.170", "reserved"),
    ("198.18.0.1", "benchmarking"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("192.88.99.1", "6to4 relay"),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fe80::1", "link-local"),
    ("fe80::1%1", "link-local"),
    ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    ("fec0::1", "site-local"),
    ("ff02::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),  # RFC 9637 (2024)
    ("100::1", "discard-only"),
    ("2001:2::1", "IETF protocol assignment"),  # benchmarking, inside 2001::/23
    ("4000::1", "not global unicast"),  # unassigned
    ("5f00::1", "not global unicast"),  # SRv6 SIDs (RFC 9602)
    ("::8.8.8.8", "not global unicast"),  # IPv4-compatible, deprecated: even of a public one
    ("64:ff9b:1::1", "local-use NAT64"),
    # IPv4 inside IPv6: ipaddress judges these by the IPv6 form alone.
    ("::ffff:127.0.0.1", "127.0.0.1 embedded in ::ffff:127.0.0.1 is a loopback"),
    ("::ffff:169.254.169.254",
     "169.254.169.254 embedded in ::ffff:169.254.169.254 is a link-local"),
    ("::ffff:10.0.0.1", "10.0.0.1 embedded in ::ffff:10.0.0.1 is a private"),
    ("::ffff:0:7f00:1", "127.0.0.1 embedded in ::ffff:0:7f00:1 is a loopback"),  # translated
    ("::127.0.0.1", "127.0.0.1 embedded in ::7f00:1 is a loopback"),  # IPv4-compatible
    ("::a9fe:a9fe", "169.254.169.254 embedded in ::a9fe:a9fe is a link-local"),
    ("64:ff9b::7f00:1", "127.0.0.1 embedded in 64:ff9b::7f00:1 is a loopback"),  # NAT64
    ("64:ff9b::a9fe:a9fe", "169.254.169.254 embedded in 64:ff9b::a9fe:a9fe is a link-local"),
    ("64:ff9b::c0a8:101", "192.168.1.1 embedded in 64:ff9b::c0a8:101 is a private"),
    ("2002:7f00:1::1", "127.0.0.1 embedded in 2002:7f00:1::1 is a loopback"),  # 6to4
    ("2002:a9fe:a9fe::", "169.254.169.254 embedded in 2002:a9fe:a9fe:: is a link-local"),
    ("2002:c0a8:101::1", "192.168.1.1 embedded in 2002:c0a8:101::1 is a private"),
    # 6to4 and Teredo are refused whatever they carry: relays are not globally reachable
    # (RFC 7526 deprecated 6to4's anycast). Python 3.12.1's ipaddress calls 6to4 global.
    ("2002:808:808::1", "6to4"),
    ("64:ff9b:1::808:808", "local-use NAT64"),  # 3.12.1's ipaddress: global
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45 embedded in"),  # documentation
    ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", "Teredo"),  # both carried addresses public
    # Teredo: the client address is stored inverted (RFC 4380 4).
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1 embedded in"),
]

ALLOWED = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "172.32.0.1",  # just past 172.16.0.0/12
    "100.128.0.1",  # just past 100.64.0.0/10
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
]


@pytest.mark.parametrize(("address", "reason"), REFUSED)
def test_non_public_addresses_are_refused_with_the_reason(address: str, reason: str) -> None:
    why = address_refusal(ipaddress.ip_address(address))
    assert why is not None and reason in why


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None


@pytest.fixture
def other_ipaddress(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``ipaddress`` whose judgements and unwrapping all differ from this interpreter's:
    every address global and none private or reserved, no embedded IPv4 found, and mapped
    addresses printed in hex (as 3.12 does)."""
    for cls in (ipaddress.IPv4Address, ipaddress.IPv6Address):
        for name, value in (("is_global", True), ("is_private", False),
                            ("is_reserved", False), ("is_link_local", False)):
            monkeypatch.setattr(cls, name, property(lambda self, v=value: v))
    for name in ("ipv4_mapped", "sixtofour", "teredo"):
        monkeypatch.setattr(ipaddress.IPv6Address, name, property(lambda self: None))
    plain = ipaddress.IPv6Address.__str__
    monkeypatch.setattr(ipaddress.IPv6Address, "__str__",
                        lambda self: plain(self).replace("::ffff:127.0.0.1", "::ffff:7f00:1"))


@pytest.mark.parametrize(("address", "reason"), REFUSED)
def test_refusals_do_not_depend_on_the_interpreters_ipaddress(
        other_ipaddress: None, address: str, reason: str) -> None:
    why = address_refusal(ipaddress.ip_address(address))
    assert why is not None and reason in why


@pytest.mark.parametrize("address", ALLOWED)
def test_allowances_do_not_depend_on_the_interpreters_ipaddress(other_ipaddress: None,
                                                                address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(("address", "inner"), [
    ("::ffff:1.2.3.4", ["1.2.3.4"]),
    ("::ffff:0:1.2.3.4", ["1.2.3.4"]),
    ("::1.2.3.4", ["1.2.3.4"]),
    ("64:ff9b::102:304", ["1.2.3.4"]),
    ("2002:102:304::", ["1.2.3.4"]),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", ["65.54.227.120", "192.0.2.45"]),
    ("2606:4700::1111", []),
    ("::1", []),
])
def test_embedded_ipv4_addresses_are_unwrapped(address: str, inner: list[str]) -> None:
    found = embedded_ipv4(ipaddress.IPv6Address(address))
    assert [str(a) for a in found] == inner


async def test_a_mapped_literal_is_named_as_written_on_every_python(
        other_ipaddress: None) -> None:
    with pytest.raises(UrlRefused) as info:
        await check_url("http://[::ffff:127.0.0.1]:8080/", PUBLIC)
    assert info.value.reason == ("it is 127.0.0.1 embedded in ::ffff:127.0.0.1 is a "
                                 "loopback address")


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.1", "::ffff:127.0.0.1", "fe80::1"])
def test_allow_private_network_lifts_the_address_check(address: str) -> None:
    policy = NetworkPolicy(allow_private_network=True)
    assert policy.refusal(ipaddress.ip_address(address)) is None


def test_allowed_networks_let_only_their_addresses_through() -> None:
    assert LOOPBACK_ONLY.refusal(ipaddress.ip_address("127.0.0.1")) is None
    assert LOOPBACK_ONLY.refusal(ipaddress.ip_address("127.0.0.2")) is not None


def resolver_for(table: dict[str, list[str]], calls: list[str] | None = None):
    """A resolver answering from ``table`` (the test's DNS), recording each name it resolves."""

    async def resolve(host: str, port: int) -> list[IPAddress]:
        if calls is not None:
            calls.append(host)
        if host not in table:
            raise OSError(f"unknown test host {host}")
        return [ipaddress.ip_address(a) for a in table[host]]

    return resolve


async def test_localhost_is_refused_after_resolution() -> None:
    with pytest.raises(UrlRefused, match=r"localhost resolves to .*loopback"):
        await check_url("http://localhost:8080/", PUBLIC)


async def test_localhost_is_allowed_when_private_networks_are() -> None:
    target = await check_url("http://localhost:8080/", NetworkPolicy(allow_private_network=True))
    assert target.host == "localhost"
    assert ipaddress.ip_address("127.0.0.1") in target.addresses


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/", "http://[::1]/", "http://[::ffff:127.0.0.1]/",
    "http://2130706433/",  # 127.0.0.1 as one number: the system resolver parses it
    "http://0x7f000001/", "http://127.1/",
    "http://0177.0.0.1/",  # octal: httpx2 rejects the URL itself
])
async def test_loopback_spellings_are_refused(url: str) -> None:
    with pytest.raises(UrlRefused, match=r"loopback|not a valid URL"):
        await check_url(url, PUBLIC)


@pytest.mark.parametrize(("url", "reason"), [
    ("ftp://example.com/file", "only http and https"),
    ("file:///etc/passwd", "only http and https"),
    ("gopher://example.com/", "only http and https"),
    ("http://user:secret@example.com/", "credentials"),
    ("http:///path-only", "no host"),
])
async def test_urls_other_than_plain_http_are_refused(url: str, reason: str) -> None:
    with pytest.raises(UrlRefused, match=reason):
        await check_url(url, PUBLIC, resolver_for({"example.com": ["93.184.215.14"]}))


async def test_one_private_answer_among_public_ones_refuses_the_host() -> None:
    resolve = resolver_for({"mixed.test": ["93.184.215.14", "10.0.0.5"]})
    with pytest.raises(UrlRefused, match=r"mixed.test resolves to 10.0.0.5, a private") as info:
        await check_url("https://mixed.test/", PUBLIC, resolve)
    assert info.value.address == ipaddress.ip_address("10.0.0.5")


async def test_a_public_name_is_checked_and_kept_with_its_addresses() -> None:
    resolve = resolver_for({"example.test": ["93.184.215.14", "2606:4700::1"]})
    target = await check_url("https://example.test/a?b=1", PUBLIC, resolve)
    assert target.host == "example.test"
    assert [str(a) for a in target.addresses] == ["93.184.215.14", "2606:4700::1"]


async def test_an_unresolvable_host_is_a_clear_error() -> None:
    with pytest.raises(UrlRefused, match="could not be resolved"):
        await check_url("http://nowhere.test/", PUBLIC, resolver_for({}))


async def test_requests_go_to_the_checked_address_with_the_original_host_header() -> None:
    calls: list[str] = []
    resolve = resolver_for({"app.test": ["127.0.0.1"]}, calls)
    with LoopbackServer({"/hello": Reply(200, {"Content-Type": "text/plain"}, b"hi")}) as server:
        async with guarded_client(LOOPBACK_ONLY, resolver=resolve) as client:
            response = await client.get(server.url("/hello", host="app.test"))
    assert response.status_code == 200 and response.text == "hi"
    # app.test exists in no DNS: the connection used the address checked once, and the
    # server still saw the name.
    assert calls == ["app.test"]
    assert server.received[0].headers["Host"] == f"app.test:{server.port}"
    assert str(response.url) == server.url("/hello", host="app.test")


async def test_the_transport_refuses_before_connecting() -> None:
    with LoopbackServer({"/": Reply(body=b"never")}) as server:
        async with guarded_client(PUBLIC) as client:
            with pytest.raises(UrlRefused, match="loopback"):
                await client.get(server.url("/"))
        assert server.received == []


async def test_proxy_settings_in_the_environment_are_ignored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9/")  # the discard port: nothing answers
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with LoopbackServer({"/": Reply(body=b"direct")}) as server:
        page = await fetch(server.url("/"), policy=LOOPBACK_ONLY)
    assert page.body == b"direct"


def _certificate(name: str, directory: Path) -> tuple[Path, Path, bytes]:
    """A self-signed certificate for ``name``: (cert file, key file, PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False,
                                     decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_file, key_file = directory / f"{name}.crt", directory / f"{name}.key"
    cert_file.write_bytes(pem)
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file, pem


def _tls_server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context


async def test_tls_uses_the_host_name_for_sni_and_verification(tmp_path: Path) -> None:
    cert_file, key_file, pem = _certificate("secure.test", tmp_path)
    trust = ssl.create_default_context(cadata=pem.decode())
    resolve = resolver_for({"secure.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    routes = {"/": Reply(200, {"Content-Type": "text/plain"}, b"over tls")}
    with LoopbackServer(routes, tls=_tls_server_context(cert_file, key_file)) as server:
        page = await fetch(server.url("/", host="secure.test", scheme="https"),
                           policy=LOOPBACK_ONLY, resolver=resolve, verify=trust)
        assert page.body == b"over tls"
        assert server.server_names[-1] == "secure.test"
        # Same address, another name: the certificate is checked against the name, not the IP.
        with pytest.raises(ToolError, match=r"(?i)certificate verify failed.*hostname"):
            await fetch(server.url("/", host="other.test", scheme="https"),
                        policy=LOOPBACK_ONLY, resolver=resolve, verify=trust)
