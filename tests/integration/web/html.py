"""Checks on rendered pages: the CSP forbids inline code, so no page may contain any."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from django.http import HttpResponse

_CSRF_VALUE = re.compile(rb'(name="csrfmiddlewaretoken" value=")[^"]*(")')


class _InlineCode(HTMLParser):
    """Collects what the policy would block: inline scripts and styles, event handlers."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "script" and "src" not in names:
            self.problems.append("<script> without src")
        if tag == "style":
            self.problems.append("<style> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}=...>")
            if name == "style":
                self.problems.append(f"<{tag} style=...>")
            if name in ("href", "src", "action") and (value or "").strip().lower().startswith(
                    "javascript:"):
                self.problems.append(f"<{tag} {name}=javascript:...>")


def assert_no_inline_code(response: HttpResponse) -> None:
    """A page has a CSP header and nothing inline that the policy would block."""
    assert "Content-Security-Policy" in response.headers
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    parser = _InlineCode()
    parser.feed(response.content.decode())
    assert parser.problems == [], parser.problems


def without_csrf(content: bytes) -> bytes:
    """``content`` with the per-response CSRF token values blanked, for comparing pages."""
    return _CSRF_VALUE.sub(rb"\1\2", content)
