"""Wiki pages as HTML: Markdown rendered by markdown-it-py, then sanitized by nh3 (issue 11).

Two libraries, two lines of defence, one source of truth for what a browser is shown:

1. markdown-it-py with the CommonMark preset plus tables and strikethrough, raw HTML off
   (``html=False``): ``<script>`` typed in a page is text. Its ``validateLink`` already refuses
   ``javascript:``, ``vbscript:`` and ``file:`` links.
2. nh3 (ammonia) on the final HTML with an explicit allow-list: the tags Markdown makes, no
   ``style`` or event attributes, URLs ``http``, ``https``, ``mailto`` or relative only (so no
   ``data:`` either), ``rel="noopener noreferrer"`` on every link. The live preview goes through
   the same function, so the editor shows exactly what the page will.

Between the two, wiki links are resolved on markdown-it's tokens: a relative link to ``X.md``
becomes that page's URL (resolved from the folder of the page it is in; a missing page gets the
``wiki-missing`` class; its URL offers to create it), a link or image under ``_files/`` the
attachment's URL. A link that climbs out of the wiki is dropped. Table alignment becomes a class,
since ``style`` never survives. Headings get ids by GitHub's rule (lower case, punctuation
dropped, spaces as ``-``, ``-1``, ``-2`` for repeats) behind :data:`ANCHOR_PREFIX`, and links to
``#fragment`` follow them, so a page's ids never meet the site's own. The page's CSP (no inline
script, images from the site only) is the third line.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit

import nh3
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token

from apps.engine.wiki import is_attachment, is_page

__all__ = ["DiffLine", "attachment_url", "diff_lines", "page_url", "render_markdown"]

ATTACHMENTS = "_files/"
ANCHOR_PREFIX = "section-"
_ALIGN = re.compile(r"\Atext-align:(left|center|right)\Z")
_NOT_IN_SLUG = re.compile(r"[^\w\- ]")
_SCHEME = re.compile(r"\A[A-Za-z][A-Za-z0-9+.-]*:")

_TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s",
         "code", "pre", "blockquote", "ul", "ol", "li", "a", "img", "table", "thead", "tbody",
         "tr", "th", "td"}
_ALIGN_CLASSES = {"wiki-align-left", "wiki-align-center", "wiki-align-right"}
_CLEANER = nh3.Cleaner(
    tags=_TAGS,
    clean_content_tags={"script", "style"},
    attributes={"a": {"href", "title"}, "img": {"src", "alt", "title"}, "ol": {"start"},
                **{f"h{level}": {"id"} for level in range(1, 7)}},
    allowed_classes={"a": {"wiki-missing"}, "th": _ALIGN_CLASSES, "td": _ALIGN_CLASSES},
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer",
    strip_comments=True,
)
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "typographer": False}).enable(
    ["table", "strikethrough"])


def page_url(team_id: int, path: str) -> str:
    """The URL of page ``path`` (``.md`` included) of the team's wiki."""
    return reverse("wiki:page", kwargs={"team_id": team_id, "path": path})


def attachment_url(team_id: int, path: str) -> str:
    """The URL an attachment (``_files/...``) is served at: the page route serves files too."""
    return page_url(team_id, path)


def render_markdown(text: str, *, team_id: int, page_path: str = "",
                    existing: Collection[str] | None = None) -> SafeString:
    """``text`` as sanitized HTML, links between pages resolved from ``page_path``'s folder.

    ``existing``: the wiki's paths, to mark links to missing pages (None: mark nothing).
    """
    tokens = _MARKDOWN.parse(text or "")
    _anchor_headings(tokens)
    _rewrite(tokens, _Links(team_id, posixpath.dirname(page_path), existing))
    html = _MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {})
    return mark_safe(_CLEANER.clean(html))  # nh3 made it safe


@dataclass(frozen=True, slots=True)
class _Links:
    team_id: int
    folder: str
    existing: Collection[str] | None

    def resolve(self, url: str, *, image: bool) -> tuple[str | None, bool]:
        """The href/src to use for ``url`` (None: drop it) and whether it names a missing
        page. Absolute URLs, fragments and site paths stay as they are (nh3 judges them)."""
        if url.startswith("#"):
            return _anchor(url[1:]), False
        if not url or url.startswith(("/", "?")) or _SCHEME.match(url):
            return url, False
        parts = urlsplit(url)
        target = unquote(parts.path)
        if target.startswith(ATTACHMENTS):
            path = target  # attachments live at the root, whichever page links them
        else:
            path = posixpath.normpath(posixpath.join(self.folder, target))
            if path == ".." or path.startswith("../"):
                return None, False  # out of the wiki
        fragment = _anchor(parts.fragment) if parts.fragment else ""
        if is_attachment(path):
            return attachment_url(self.team_id, path), False
        if is_page(path) and not image:
            missing = self.existing is not None and path not in self.existing
            return page_url(self.team_id, path) + ("" if missing else fragment), missing
        return url, False


def _slug(text: str) -> str:
    """GitHub's anchor of a heading's text: ``"Roll back (fast)!"`` → ``"roll-back-fast"``."""
    return _NOT_IN_SLUG.sub("", text.strip().lower()).replace(" ", "-") or "section"


def _anchor_headings(tokens: list[Token]) -> None:
    seen: dict[str, int] = {}
    for token, inline in zip(tokens, tokens[1:], strict=False):
        if token.type != "heading_open":
            continue
        slug = _slug("".join(child.content for child in inline.children or []
                                    if child.type in ("text", "code_inline")))
        repeat = seen.get(slug, 0)
        seen[slug] = repeat + 1
        token.attrSet("id", ANCHOR_PREFIX + (f"{slug}-{repeat}" if repeat else slug))


def _anchor(fragment: str) -> str:
    return f"#{ANCHOR_PREFIX}{fragment}" if fragment else "#"


def _rewrite(tokens: list[Token], links: _Links) -> None:
    for token in tokens:
        if token.type in ("th_open", "td_open"):
            _align_class(token)
        if token.children:
            _rewrite(token.children, links)
        if token.type in ("link_open", "image"):
            name = "src" if token.type == "image" else "href"
            url, missing = links.resolve(str(token.attrGet(name) or ""),
                                         image=token.type == "image")
            if url is None:
                token.attrs.pop(name, None)
            else:
                token.attrSet(name, url)
            if missing:
                token.attrSet("class", "wiki-missing")
                token.attrSet("title", "This page does not exist yet: create it")


def _align_class(token: Token) -> None:
    style = token.attrs.pop("style", None)
    match = _ALIGN.match(str(style or ""))
    if match:
        token.attrSet("class", f"wiki-align-{match.group(1)}")


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a unified diff, for the diff page: ``kind`` picks its colour."""

    kind: Literal["add", "del", "context", "hunk", "meta"]
    text: str


def diff_lines(diff: str) -> list[DiffLine]:
    """A unified diff (``git diff`` output) split into typed lines."""
    lines: list[DiffLine] = []
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
            lines.append(DiffLine("hunk", line))
        elif not in_hunk or line.startswith("\\"):
            lines.append(DiffLine("meta", line))
        elif line.startswith("+"):
            lines.append(DiffLine("add", line))
        elif line.startswith("-"):
            lines.append(DiffLine("del", line))
        else:
            lines.append(DiffLine("context", line))
        if line.startswith("diff --git"):
            in_hunk = False
    return lines
