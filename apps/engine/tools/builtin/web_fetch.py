"""WebFetch: the text of a web page, through the SSRF guard (DESIGN 2.5, 4 "SSRF").

The request goes through :func:`apps.engine.tools.net.fetch`: public addresses only (unless the
host's ``ToolEnvironment.allow_private_network`` says otherwise), every redirect checked again,
at most 5 MB downloaded (streamed; the download stops past the cap), 30 s in all.

What comes back depends on the media type:

- HTML (``text/html``, ``application/xhtml+xml``): Markdown made by ``markdownify`` over a
  ``beautifulsoup4`` tree without scripts, styles and embedded objects; links are made absolute
  so the model can fetch them next, ``data:`` images are dropped (they are megabytes of base64);
- other text (``text/*``, JSON, XML, JavaScript, YAML and their ``+json``/``+xml`` kinds): the
  text itself, decoded with the declared charset (UTF-8 otherwise);
- no declared type: text when the bytes are UTF-8 without NUL bytes;
- anything else (images, PDF, archives, ``application/octet-stream``): refused with a message.

The result starts with the final URL, status and type, and is cut after ``max_chars``
characters with a note. Arguments: ``url``; ``prompt`` (optional, accepted because models trained
on Claude Code's WebFetch send it; the whole text is returned whatever it asks).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urljoin

from bs4 import BeautifulSoup
from markdownify import MarkdownConverter

from apps.engine.errors import ToolError
from apps.engine.tools.base import BaseTool, Concurrency, ToolContext, ToolOutput, ToolSpec
from apps.engine.tools.net import (
    DEFAULT_MAX_BYTES,
    MAX_REDIRECTS,
    Fetched,
    IPNetwork,
    NetworkPolicy,
    Resolver,
    fetch,
)
from apps.engine.tools.results import LARGE_RESULT_NOTE

__all__ = ["DEFAULT_MAX_CHARS", "WebFetchTool", "html_to_markdown", "is_text_type"]

DEFAULT_MAX_CHARS = 100_000
_USER_AGENT = "Mozilla/5.0 (compatible; confab-WebFetch/0.1)"
_ACCEPT = ("text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,"
           "application/json;q=0.9,*/*;q=0.5")
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset({
    "application/json", "application/xml", "application/javascript", "application/ecmascript",
    "application/x-javascript", "application/yaml", "application/x-yaml", "application/toml",
    "application/x-ndjson", "application/x-sh", "application/sql", "application/graphql",
})
_BLANK_RUNS = re.compile(r"\n{3,}")
# Not content: executable, styling, or embedded binary.
_DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object",
                 "embed", "head")

_DESCRIPTION = f"""\
Fetch a URL (http or https) and return its content as text: HTML pages are converted to \
Markdown, plain text and JSON are returned as they are, binary files (images, PDFs, archives) \
are refused.

- Only public addresses are reachable; redirects are followed (at most {MAX_REDIRECTS}) and \
checked.
- At most {DEFAULT_MAX_BYTES // (1024 * 1024)} MB are downloaded; the text is cut after \
{DEFAULT_MAX_CHARS:,} characters. {LARGE_RESULT_NOTE}
- Links in converted pages are absolute, so you can fetch them next.
- `prompt` is optional: the whole text is returned whatever it says."""


def is_text_type(media_type: str) -> bool:
    """Whether ``media_type`` (lower case, no parameters) is text WebFetch passes through."""
    return (media_type.startswith("text/") or media_type in _TEXT_TYPES
            or media_type.endswith(("+json", "+xml")))


def _absolutize(soup: BeautifulSoup, base_url: str) -> None:
    """Make links absolute and drop what only a browser can use (``javascript:``, ``data:``)."""
    for link in soup.find_all("a", href=True):
        href = str(link["href"]).strip()
        if href.lower().startswith("javascript:"):
            del link["href"]
        else:
            link["href"] = urljoin(base_url, href)
    for image in soup.find_all("img"):
        src = str(image.get("src", "")).strip()
        if not src or src.lower().startswith("data:"):
            image.decompose()
        else:
            image["src"] = urljoin(base_url, src)


def _squeeze(markdown: str) -> str:
    """Trailing spaces off and at most one blank line in a row (markdownify leaves runs)."""
    lines = "\n".join(line.rstrip() for line in markdown.splitlines())
    return _BLANK_RUNS.sub("\n\n", lines).strip()


def html_to_markdown(html: bytes | str, *, base_url: str = "",
                     charset: str | None = None) -> tuple[str, str]:
    """``(title, markdown)`` of an HTML document; ``charset`` is the declared one (bytes input;
    otherwise Beautiful Soup detects it from the document)."""
    # The declared charset is tried first (it overrides <meta>, as in browsers); bs4 falls back
    # to detection when it does not decode.
    declared = charset if isinstance(html, bytes) else None
    soup = BeautifulSoup(html, "html.parser", from_encoding=declared)
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup.find_all(_DROPPED_TAGS):
        tag.decompose()
    if base_url:
        _absolutize(soup, base_url)
    converter = MarkdownConverter(heading_style="ATX", bullets="-", escape_underscores=False)
    return title, _squeeze(converter.convert_soup(soup))


def _decode(body: bytes, charset: str | None) -> str:
    """Text of ``body`` in ``charset`` (UTF-8 when missing or unknown), bad bytes replaced."""
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def _looks_textual(body: bytes) -> bool:
    """For an undeclared type: UTF-8 without NUL bytes in the first 8 KiB."""
    head = body[:8192]
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start >= len(head) - 3  # a character cut by the 8 KiB boundary
    return True


def _content(page: Fetched) -> tuple[str, str]:
    """``(title, text)`` of a page, or ToolError for binary content."""
    media = page.content_type
    if media in _HTML_TYPES:
        return html_to_markdown(page.body, base_url=page.url, charset=page.charset)
    if is_text_type(media) or (not media and _looks_textual(page.body)):
        return "", _decode(page.body, page.charset)
    shown = media or "undeclared"
    raise ToolError(f"{page.url} is binary content ({shown}, {len(page.body)} bytes); WebFetch "
                    "returns text, HTML and JSON only.")


def _cut(text: str, max_chars: int) -> str:
    """``text`` cut after ``max_chars`` characters, with a note saying how much is missing."""
    if len(text) <= max_chars:
        return text
    return (f"{text[:max_chars]}\n\n[... cut: showing the first {max_chars} of {len(text)} "
            "characters]")


def _render(requested: str, page: Fetched, title: str, text: str, max_chars: int) -> str:
    """The result: a short header, then the (cut) text."""
    header = [f"URL: {page.url}"]
    if page.url != requested:
        header.append(f"Redirected from: {requested}")
    header.append(f"Status: {page.status}")
    header.append(f"Content-Type: {page.content_type or 'undeclared'}")
    if title:
        header.append(f"Title: {title}")
    return "\n".join(header) + "\n\n" + _cut(text or "(empty)", max_chars)


class WebFetchTool(BaseTool):
    """``WebFetch {url, prompt?}``: see the module docstring.

    ``resolver`` replaces the system resolver (tests); ``allowed_networks`` are addresses an
    operator lets through although private; ``max_bytes`` caps the download, ``max_chars`` the
    text returned, ``timeout_s`` the whole fetch; ``verify`` is httpx2's TLS verification.
    """

    spec = ToolSpec(
        name="WebFetch",
        description=_DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http(s) URL to fetch."},
                "prompt": {"type": "string",
                           "description": "What you are looking for (optional)."},
            },
            "required": ["url"],
            "additionalProperties": False,
        },
        concurrency=Concurrency.ALWAYS,
        requires_approval=False,
        timeout_s=60.0,
    )

    def __init__(self, *, resolver: Resolver | None = None,
                 allowed_networks: Iterable[str | IPNetwork] = (),
                 max_bytes: int = DEFAULT_MAX_BYTES, max_chars: int = DEFAULT_MAX_CHARS,
                 timeout_s: float = 30.0, verify: Any = True) -> None:
        self._resolver = resolver
        self._allowed = tuple(allowed_networks)
        self._max_bytes = max_bytes
        self._max_chars = max_chars
        self._timeout_s = timeout_s
        self._verify = verify

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        url = ctx.arguments["url"].strip()
        policy = NetworkPolicy.build(allow_private_network=ctx.env.allow_private_network,
                                     allowed_networks=self._allowed)
        page = await fetch(url, policy=policy, resolver=self._resolver,
                           max_bytes=self._max_bytes, timeout_s=self._timeout_s,
                           verify=self._verify,
                           headers={"User-Agent": _USER_AGENT, "Accept": _ACCEPT})
        title, text = _content(page)
        return ToolOutput(_render(url, page, title, text, self._max_chars),
                          is_error=page.status >= 400)
