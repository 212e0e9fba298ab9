"""The sources of an answer: the citations and grounding its text blocks carry, in the
providers' own forms, as one numbered list of ``{"title", "site", "url"}``.

The forms (stored verbatim on :class:`apps.engine.messages.TextBlock` ``citations``):

- Anthropic ``web_search_result_location`` (``url``, ``title``; the web search tool's
  citations, https://docs.anthropic.com/en/docs/build-with-claude/tool-use/web-search-tool);
  document citations (``char_location`` ...) name no link and are left out;
- OpenAI / OpenRouter ``url_citation`` annotations (``{"type": "url_citation",
  "url_citation": {"url", "title"}}``, https://openrouter.ai/docs/features/web-search; the
  flat form with ``url`` and ``title`` beside ``type`` too);
- Perplexity's bare URL strings (its top-level ``citations``);
- Gemini ``groundingMetadata`` as the assembler keeps it, ``{"type": "grounding_metadata",
  "metadata": {...}}``: its ``groundingChunks[].web`` / ``.retrievedContext``
  (``uri``, ``title``, ``domain``; https://ai.google.dev/gemini-api/docs/google-search).
  Google's redirect links (``vertexaisearch.cloud.google.com``) title the chunk with the site.

Only ``http`` and ``https`` links with a host are kept (a model's ``javascript:`` or ``data:``
link never becomes a source); titles are plain text without control characters, at most
:data:`MAX_TITLE` characters; the same link is listed once, at its first place.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

from apps.engine.messages import ContentBlock, TextBlock

__all__ = ["GROUNDING", "MAX_TITLE", "MAX_URL", "grounding_citation", "sources"]

GROUNDING = "grounding_metadata"
"""The ``type`` of the citation entry that holds a Gemini ``groundingMetadata``."""

MAX_TITLE = 300
MAX_URL = 2048
_REDIRECT_HOSTS = frozenset({"vertexaisearch.cloud.google.com"})
_SPACE = re.compile(r"\s+")


def grounding_citation(metadata: dict[str, Any]) -> dict[str, Any]:
    """The citation entry that keeps Gemini's ``groundingMetadata`` on a text block."""
    return {"type": GROUNDING, "metadata": metadata}


def sources(blocks: Iterable[ContentBlock | dict[str, Any]]) -> list[dict[str, str]]:
    """The numbered sources of ``blocks`` (content blocks, or their stored JSON form; list
    order is the numbering): ``[{"title", "site", "url"}]``, http(s) only, each link once."""
    seen: set[str] = set()
    found: list[dict[str, str]] = []
    for block in blocks:
        for citation in _citations(block):
            for url, title, site in _links(citation):
                source = _source(url, title, site)
                if source is not None and source["url"] not in seen:
                    seen.add(source["url"])
                    found.append(source)
    return found


def _citations(block: ContentBlock | dict[str, Any]) -> list[Any]:
    if isinstance(block, TextBlock):
        return block.citations or []
    if isinstance(block, dict) and block.get("type") == "text":
        citations = block.get("citations")
        return citations if isinstance(citations, list) else []
    return []


def _links(citation: Any) -> Iterator[tuple[Any, Any, Any]]:
    """(url, title, site) candidates of one citation entry, unchecked."""
    if isinstance(citation, str):
        yield citation, None, None
        return
    if not isinstance(citation, dict):
        return
    kind = citation.get("type")
    if kind == GROUNDING:
        metadata = citation.get("metadata")
        chunks = metadata.get("groundingChunks") if isinstance(metadata, dict) else None
        for chunk in chunks if isinstance(chunks, list) else ():
            for key in ("web", "retrievedContext"):
                web = chunk.get(key) if isinstance(chunk, dict) else None
                if isinstance(web, dict):
                    yield web.get("uri"), web.get("title"), web.get("domain")
    elif kind == "url_citation":
        inner = citation.get("url_citation")
        where = inner if isinstance(inner, dict) else citation
        yield where.get("url"), where.get("title"), None
    elif kind == "web_search_result_location":
        yield citation.get("url"), citation.get("title"), None


def _source(url: Any, title: Any, site: Any) -> dict[str, str] | None:
    link = _http_link(url)
    if link is None:
        return None
    host = (urlsplit(link).hostname or "").removeprefix("www.")
    name = _plain(title)
    shown_site = _plain(site) or (name if host in _REDIRECT_HOSTS and name else host)
    return {"title": name or shown_site, "site": shown_site, "url": link}


def _http_link(url: Any) -> str | None:
    """``url`` when it is an absolute http(s) link with a host and nothing that could break
    out of an attribute (whitespace, control characters, quotes, angle brackets); spaces,
    which Google's search links hold unescaped, become ``%20``."""
    if not isinstance(url, str):
        return None
    url = url.strip().replace(" ", "%20")
    if not url or len(url) > MAX_URL:
        return None
    if any(c.isspace() or unicodedata.category(c) == "Cc" or c in "\"'<>`\\" for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return url


def _plain(text: Any) -> str:
    """``text`` as one line of plain text (control and format characters dropped, spaces
    collapsed), at most :data:`MAX_TITLE` characters; "" for anything but a string."""
    if not isinstance(text, str):
        return ""
    spaced = _SPACE.sub(" ", text)  # line breaks and tabs first: they part words
    line = "".join(c for c in spaced if unicodedata.category(c) not in ("Cc", "Cf")).strip()
    return line if len(line) <= MAX_TITLE else line[:MAX_TITLE - 1] + "…"
