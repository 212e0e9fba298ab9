"""WebFetch against a real HTTP server on 127.0.0.1.

How the redirect check is exercised for real: loopback is refused by default, so the tool is
built with ``allowed_networks=["127.0.0.1/32"]`` (the operator exception the guard supports)
and ``allow_private_network`` off. The first hop to 127.0.0.1 is then allowed, and the server's
real 302 points at another loopback address (127.0.0.2, its IPv4-mapped spelling, or a name the
test resolver maps to 127.0.0.3), which the guard must refuse on the redirect. Every refused
target is on loopback, so even a broken guard would send nothing off this machine.
"""

from __future__ import annotations

import gzip
import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest

from apps.engine.errors import ToolError
from apps.engine.tools.base import ToolContext, ToolEnvironment, ToolOutput
from apps.engine.tools.builtin.web_fetch import WebFetchTool, html_to_markdown, is_text_type
from apps.engine.tools.net import IPAddress, UrlRefused
from apps.engine.tools.registry import ToolRegistry

from .loopback_http import LoopbackServer, Reply

PAGE = b"""<!doctype html>
<html><head><title>Release notes</title><style>body { color: red }</style>
<script>document.write("tracking")</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Version 2.0</h1>
<p>The <strong>new</strong> parser is <a href="/docs/parser">documented here</a>.</p>
<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB" alt="pixel">
<ul><li>faster</li><li>smaller</li></ul>
<pre>make test</pre>
<noscript>enable javascript</noscript>
</body></html>"""
DATA = {"name": "confab", "tools": ["Bash", "WebFetch"], "ok": True}
SIX_MB = 6 * 1024 * 1024
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def _routes(port_holder: dict[str, int]) -> dict[str, Any]:
    def redirect(to: str):
        return lambda handler: Reply(302, {"Location": to.format(port=port_holder["port"])})

    big_chunk = b"x" * 65536
    return {
        "/page.html": Reply(200, {"Content-Type": "text/html; charset=utf-8"}, PAGE),
        "/data.json": Reply(200, {"Content-Type": "application/json"}, json.dumps(DATA).encode()),
        "/latin1.txt": Reply(200, {"Content-Type": "text/plain; charset=iso-8859-1"},
                             "café crème".encode("latin-1")),
        "/untyped-text": Reply(200, {}, b"plain words, no type"),
        "/untyped-binary": Reply(200, {}, b"\x00\x01\x02binary"),
        "/long.txt": Reply(200, {"Content-Type": "text/plain"}, b"a" * 5000),
        "/image.png": Reply(200, {"Content-Type": "image/png"}, PNG),
        "/missing": Reply(404, {"Content-Type": "text/plain"}, b"not here"),
        "/big-streamed": Reply(200, {"Content-Type": "text/plain"},
                               chunks=lambda: (big_chunk for _ in range(SIX_MB // 65536))),
        "/big-declared": Reply(200, {"Content-Type": "text/plain",
                                     "Content-Length": str(SIX_MB)}, b"x" * 1024),
        "/gzip-bomb": Reply(200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"},
                            gzip.compress(b"\x20" * SIX_MB)),
        "/to-json": redirect("/data.json"),
        "/to-loopback-2": redirect("http://127.0.0.2:{port}/data.json"),
        "/to-mapped": redirect("http://[::ffff:127.0.0.2]:{port}/data.json"),
        "/to-internal-name": redirect("http://internal.test:{port}/data.json"),
        "/to-file": redirect("file:///etc/passwd"),
        "/loop": redirect("/loop"),
    }


@pytest.fixture
def server():
    port: dict[str, int] = {}
    with LoopbackServer(_routes(port)) as running:
        port["port"] = running.port
        yield running


async def _no_events(event: Any) -> None:
    pass


async def fetch(tool: WebFetchTool, url: str, *, workspace: Path,
                allow_private: bool = False) -> ToolOutput:
    """Call the tool the way the executor does (schema validation first)."""
    arguments = tool.prepare_arguments({"url": url})
    assert ToolRegistry([tool]).validate("WebFetch", arguments) is None
    ctx = ToolContext("call_1", arguments, workspace, _no_events,
                      env=ToolEnvironment(allow_private_network=allow_private))
    return await tool.invoke(ctx)


async def internal_dns(host: str, port: int) -> list[IPAddress]:
    """The test's DNS: one internal name on another loopback address."""
    if host == "internal.test":
        return [ipaddress.ip_address("127.0.0.3")]
    raise OSError(f"unknown test host {host}")


LOOPBACK_TOOL = WebFetchTool(allowed_networks=["127.0.0.1/32"], resolver=internal_dns)


def text_of(output: ToolOutput) -> str:
    assert isinstance(output.content, str)
    return output.content


async def test_html_becomes_markdown_without_scripts_and_with_absolute_links(
        server: LoopbackServer, workspace: Path) -> None:
    out = text_of(await fetch(LOOPBACK_TOOL, server.url("/page.html"), workspace=workspace))
    assert "Title: Release notes" in out
    assert "Content-Type: text/html" in out
    assert "# Version 2.0" in out
    assert "The **new** parser is" in out
    assert f"[documented here]({server.url('/docs/parser')})" in out
    assert "- faster\n- smaller" in out
    assert "make test" in out
    for gone in ("tracking", "color: red", "enable javascript", "data:image", "iVBOR"):
        assert gone not in out


async def test_json_is_passed_through(server: LoopbackServer, workspace: Path) -> None:
    output = await fetch(LOOPBACK_TOOL, server.url("/data.json"), workspace=workspace)
    body = text_of(output).split("\n\n", 1)[1]
    assert json.loads(body) == DATA
    assert not output.is_error


async def test_text_is_decoded_with_its_declared_charset(server: LoopbackServer,
                                                         workspace: Path) -> None:
    out = text_of(await fetch(LOOPBACK_TOOL, server.url("/latin1.txt"), workspace=workspace))
    assert out.endswith("café crème")


async def test_an_undeclared_type_is_text_only_when_it_looks_like_text(
        server: LoopbackServer, workspace: Path) -> None:
    out = text_of(await fetch(LOOPBACK_TOOL, server.url("/untyped-text"), workspace=workspace))
    assert "Content-Type: undeclared" in out and out.endswith("plain words, no type")
    with pytest.raises(ToolError, match="binary content"):
        await fetch(LOOPBACK_TOOL, server.url("/untyped-binary"), workspace=workspace)


async def test_binary_content_is_refused_with_a_clear_message(server: LoopbackServer,
                                                              workspace: Path) -> None:
    with pytest.raises(ToolError, match=r"binary content \(image/png, 72 bytes\).*text, HTML"):
        await fetch(LOOPBACK_TOOL, server.url("/image.png"), workspace=workspace)


@pytest.mark.parametrize("path", ["/big-streamed", "/big-declared", "/gzip-bomb"])
async def test_a_body_past_the_size_cap_is_refused(server: LoopbackServer, workspace: Path,
                                                   path: str) -> None:
    with pytest.raises(ToolError, match="larger than 5 MB"):
        await fetch(LOOPBACK_TOOL, server.url(path), workspace=workspace)


async def test_a_long_text_is_cut_with_a_note(server: LoopbackServer, workspace: Path) -> None:
    tool = WebFetchTool(allowed_networks=["127.0.0.1/32"], max_chars=100)
    out = text_of(await fetch(tool, server.url("/long.txt"), workspace=workspace))
    assert "a" * 100 + "\n\n[... cut: showing the first 100 of 5000 characters]" in out
    assert "a" * 101 not in out


async def test_an_http_error_status_is_an_error_result_with_the_body(
        server: LoopbackServer, workspace: Path) -> None:
    output = await fetch(LOOPBACK_TOOL, server.url("/missing"), workspace=workspace)
    assert output.is_error
    assert "Status: 404" in text_of(output) and text_of(output).endswith("not here")


async def test_redirects_on_allowed_addresses_are_followed(server: LoopbackServer,
                                                           workspace: Path) -> None:
    out = text_of(await fetch(LOOPBACK_TOOL, server.url("/to-json"), workspace=workspace))
    assert out.startswith(f"URL: {server.url('/data.json')}\n"
                          f"Redirected from: {server.url('/to-json')}\n")
    assert [r.path for r in server.received] == ["/to-json", "/data.json"]


@pytest.mark.parametrize(("path", "reason"), [
    ("/to-loopback-2", r"127\.0\.0\.2:\d+/data.json: it is a loopback address"),
    ("/to-mapped", "127.0.0.2 embedded in ::ffff:127.0.0.2 is a loopback address"),
    ("/to-internal-name", "internal.test resolves to 127.0.0.3, a loopback address"),
    ("/to-file", "only http and https"),
])
async def test_a_redirect_to_a_refused_target_is_checked_and_refused(
        server: LoopbackServer, workspace: Path, path: str, reason: str) -> None:
    with pytest.raises(UrlRefused, match=reason):
        await fetch(LOOPBACK_TOOL, server.url(path), workspace=workspace)
    assert [r.path for r in server.received] == [path]  # the first hop was really fetched


async def test_too_many_redirects_stop_after_five(server: LoopbackServer,
                                                  workspace: Path) -> None:
    with pytest.raises(ToolError, match="more than 5 redirects"):
        await fetch(LOOPBACK_TOOL, server.url("/loop"), workspace=workspace)
    assert len(server.received) == 6  # the request and five redirects


async def test_loopback_is_refused_by_default_and_nothing_is_sent(server: LoopbackServer,
                                                                  workspace: Path) -> None:
    with pytest.raises(UrlRefused, match="loopback"):
        await fetch(WebFetchTool(), server.url("/data.json"), workspace=workspace)
    assert server.received == []


async def test_allow_private_network_lets_loopback_through(server: LoopbackServer,
                                                           workspace: Path) -> None:
    out = text_of(await fetch(WebFetchTool(), server.url("/data.json"), workspace=workspace,
                              allow_private=True))
    assert json.loads(out.split("\n\n", 1)[1]) == DATA


def test_webfetch_runs_beside_others_without_approval() -> None:
    tool = WebFetchTool()
    assert tool.is_concurrency_safe({"url": "https://example.com/"})
    assert not tool.needs_approval({"url": "https://example.com/"})
    assert ToolRegistry([tool]).validate("WebFetch", {"url": "x", "prompt": "what?"}) is None


@pytest.mark.parametrize(("media_type", "text"), [
    ("text/plain", True), ("text/csv", True), ("application/json", True),
    ("application/ld+json", True), ("application/atom+xml", True), ("application/xml", True),
    ("application/javascript", True), ("image/png", False), ("application/pdf", False),
    ("application/octet-stream", False), ("application/zip", False),
])
def test_text_types(media_type: str, text: bool) -> None:
    assert is_text_type(media_type) is text


def test_html_conversion_keeps_only_one_blank_line_in_a_row() -> None:
    title, markdown = html_to_markdown("<p>a</p><div></div><br><br><br><p>b</p>")
    assert title == "" and "\n\n\n" not in markdown and markdown.startswith("a")
