"""Commit identities and messages that no name or message can forge (issue 9, Authorship).

The author is the person (or the agent on their behalf) as the host's database knows them; the
committer is always the server. A message is one line of the writer's words followed by the
host's trailers (``Confab-User: 42``), so text from a request or a model can add neither a
header nor a trailer: newlines, control characters and angle brackets are flattened first.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import datetime

from apps.engine.wiki.errors import WikiInvalid
from apps.engine.wiki.types import Author

__all__ = ["COMMITTER", "author_name", "blob_id", "commit_message", "ident_env"]

COMMITTER = ("confab", "wiki@confab.invalid")
_SUBJECT_CHARS = 200
_TRAILER_KEY = re.compile(r"\A[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*\Z")


def _flatten(text: str) -> str:
    """``text`` on one line: control and format characters and ``<``/``>`` become spaces."""
    kept = "".join(" " if ch in "<>" or unicodedata.category(ch)[0] in "CZ" else ch
                   for ch in text)
    return " ".join(kept.split())


def author_name(author: Author) -> str:
    """The author's name as it is written into the commit."""
    return _flatten(author.name) or "unknown"


def ident_env(author: Author, when: datetime) -> dict[str, str]:
    """``GIT_AUTHOR_*`` and ``GIT_COMMITTER_*`` for a commit made at ``when`` (aware, UTC)."""
    stamp = f"@{int(when.timestamp())} +0000"
    email = _flatten(author.email).replace(" ", "") or "unknown@confab.invalid"
    return {
        "GIT_AUTHOR_NAME": author_name(author),
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": COMMITTER[0],
        "GIT_COMMITTER_EMAIL": COMMITTER[1],
        "GIT_COMMITTER_DATE": stamp,
    }


def commit_message(subject: str, trailers: dict[str, str]) -> bytes:
    """The message: the flattened ``subject`` (at most 200 characters), a blank line, then
    one ``Key: value`` line per trailer. Raises WikiInvalid for a malformed trailer key."""
    lines = [_flatten(subject)[:_SUBJECT_CHARS] or "Update the wiki", ""]
    for key, value in trailers.items():
        if not _TRAILER_KEY.match(key):
            raise WikiInvalid(f"{key!r} is not a trailer key.")
        lines.append(f"{key}: {_flatten(value)}")
    return ("\n".join(lines) + "\n").encode()


def blob_id(data: bytes) -> str:
    """The id git gives ``data`` as a blob (SHA-1 of ``blob <size>\\0<data>``), computed here
    to tell an unchanged file without asking git."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
