"""File names for downloads: a title as a safe name, and the Content-Disposition that carries it.

RFC 6266 (Content-Disposition in HTTP) section 4.3: a name outside ISO-8859-1 goes in
``filename*`` as an RFC 8187 (formerly 5987) ext-value, ``UTF-8''`` and the percent-encoded
bytes; a plain ``filename`` before it serves clients that do not read ``filename*`` (those
that do prefer it).
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote

__all__ = ["attachment_disposition", "title_filename"]

MAX_NAME_CHARS = 120
MAX_FILENAME_BYTES = 240
"""The whole file name's UTF-8 length: file systems count bytes (ext4's and most others' limit
is 255), and a browser that finds the name taken appends " (1)" to it."""
# Characters no file system takes (Windows is the strictest), and quotes that would end the
# quoted-string of filename=.
_UNSAFE = re.compile(r'[\\/:*?"<>|]+')
_SPACES = re.compile(r"\s+")


def title_filename(title: str, extension: str, *, fallback: str) -> str:
    """``title`` as ``<name>.<extension>``: NFC, control and format characters dropped,
    ``\\ / : * ? " < > |`` turned into ``-``, white space collapsed, leading and trailing
    dots and spaces stripped, at most :data:`MAX_NAME_CHARS` characters before the extension
    and :data:`MAX_FILENAME_BYTES` UTF-8 bytes with it (cut between characters, never inside
    one). ``fallback`` (e.g. ``conversation-12``) when nothing is left."""
    text = unicodedata.normalize("NFC", title)
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C" or ch in "\t\n")
    text = _SPACES.sub(" ", _UNSAFE.sub("-", text)).strip(" .")
    room = MAX_FILENAME_BYTES - len(f".{extension}".encode())
    text = text[:MAX_NAME_CHARS].encode()[:room].decode(errors="ignore")  # drops a cut char
    name = text.rstrip(" .") or fallback
    return f"{name}.{extension}"


def attachment_disposition(filename: str, *, fallback: str) -> str:
    """``attachment; filename="<filename>"`` for a printable-ASCII name; otherwise
    ``attachment; filename="<fallback>"; filename*=UTF-8''<percent-encoded filename>``.
    Both names must be free of ``"`` and ``\\`` (:func:`title_filename` makes them so)."""
    if filename.isascii() and filename.isprintable():
        return f'attachment; filename="{filename}"'
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"
