"""The URL converter of wiki paths, for the pages (``apps.wiki.urls``) and the REST API
(``apps.wiki.api``): ``<wikipath:path>`` in Django's syntax, ``{wikipath:path}`` in ninja's.

A path in a URL may hold ``/`` (like Django's ``path`` converter) and arrives in Unicode NFC,
the only form the store accepts: macOS spells names decomposed (NFD: ``e`` + U+0301 for ``é``),
so a file name or a link copied from there names the same page once normalized.
"""

from __future__ import annotations

import unicodedata

from django.urls import register_converter
from django.urls.converters import PathConverter

__all__ = ["WIKI_PATH", "WikiPathConverter", "nfc"]

WIKI_PATH = "wikipath"
"""The converter's name in URL patterns."""


def nfc(text: str) -> str:
    """``text`` in Unicode normalization form C (composed: ``é`` as U+00E9)."""
    return unicodedata.normalize("NFC", text)


class WikiPathConverter(PathConverter):
    """Any non-empty text, slashes included, normalized to NFC."""

    def to_python(self, value: str) -> str:
        return nfc(value)


register_converter(WikiPathConverter, WIKI_PATH)
