"""Path and revision rules, checked before git sees anything (issue 9; ``shared/WIKI.md`` 3).

A path is a repository path of ``/``-separated segments: NFC already, no control, format (bidi,
zero-width) or other ignorable code points, no space but U+0020, no Windows-reserved characters
or device names (``con.md``, ``aux/``), no segment that is
``.``/``..``, starts with ``-`` or ``.``, ends with a space or a dot, or is ``.git`` in any case or
spelling (``git~1``, full-width dots: the CVE-2014-9390 family). Pages end in ``.md``;
attachments live under ``_files/`` with an allowed extension. CJK names are fine.
"""

from __future__ import annotations

import re
import unicodedata

from apps.engine.wiki.errors import WikiInvalid, WikiNotFound

__all__ = [
    "ATTACHMENTS_DIR",
    "MAX_DEPTH",
    "MAX_PATH_BYTES",
    "check_file_path",
    "check_new_name",
    "check_revision",
    "folder_key",
    "is_attachment",
    "is_page",
]

ATTACHMENTS_DIR = "_files"
MAX_DEPTH = 8
MAX_PATH_BYTES = 255
MAX_SEGMENT_CHARS = 100
_RESERVED_CHARS = frozenset('\\:*?"<>|')
# Default_Ignorable_Code_Point outside category Cf (which is refused as a whole): combining
# grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian selectors, variation
# selectors, tags. git on HFS+ ignores these, so ".g\u200cit" would be ".git" there.
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
    "\U0001bca0-\U0001bca3\U000e0000-\U000e0fff]"
)
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_REVISION = re.compile(r"\A(?:[0-9a-f]{40}|HEAD)\Z")
_SHORT_NAME = re.compile(r"\Agit~\d+\Z")
# Windows opens a device for these names whatever the extension, so a clone there would fail.
_DEVICE_NAMES = frozenset({"con", "prn", "aux", "nul", *(f"com{n}" for n in range(1, 10)),
                           *(f"lpt{n}" for n in range(1, 10))})


def is_page(path: str) -> bool:
    """A Markdown page (``.md``, not under ``_files/``)."""
    return path.endswith(".md") and not is_attachment(path)


def is_attachment(path: str) -> bool:
    """A file under ``_files/``."""
    return path.startswith(ATTACHMENTS_DIR + "/")


def check_revision(rev: str) -> str:
    """``rev`` if it is a full lower-case hex commit id or ``HEAD``; anything else (abbreviated
    ids, ref names, ``--output=x``) raises WikiNotFound, the answer a missing revision gets
    (Otter Wiki's 2026 argument-injection fix)."""
    if not isinstance(rev, str) or not _REVISION.match(rev):
        raise WikiNotFound("No such revision.")
    return rev


def check_file_path(path: str, *, attachment_extensions: frozenset[str]) -> str:
    """``path`` if it may name a page or an attachment, else WikiInvalid saying why."""
    if not isinstance(path, str) or not path:
        raise WikiInvalid("A page needs a path, like 'Home.md'.")
    if unicodedata.normalize("NFC", path) != path:
        raise WikiInvalid("The path must be in Unicode NFC form.")
    if len(path.encode()) > MAX_PATH_BYTES:
        raise WikiInvalid(f"The path is longer than {MAX_PATH_BYTES} bytes.")
    segments = path.split("/")
    if len(segments) > MAX_DEPTH:
        raise WikiInvalid(f"The path is deeper than {MAX_DEPTH} levels.")
    for segment in segments:
        _check_segment(segment)
    if is_attachment(path):
        extension = path.rsplit(".", 1)[-1].lower() if "." in segments[-1] else ""
        if len(segments) < 2 or extension not in attachment_extensions:
            allowed = ", ".join(sorted(attachment_extensions))
            raise WikiInvalid(f"Attachments under {ATTACHMENTS_DIR}/ must be one of: {allowed}.")
    elif not path.endswith(".md"):
        raise WikiInvalid("Page paths end in '.md' (attachments go under _files/).")
    return path


def check_new_name(path: str) -> str:
    """``path`` if a file may newly take that name (checked by :func:`check_file_path` too):
    not with U+FFFD, what a URL's bytes that are not UTF-8 decode to (Daphne replaces them),
    so such a name would be reached by many different URLs. A file already named so (an
    earlier version allowed it) is still read, renamed away and deleted."""
    if "\ufffd" in path:
        raise WikiInvalid("The path may not contain '\ufffd' (U+FFFD): it stands for bytes "
                          "that were not UTF-8.")
    return path


def _check_segment(segment: str) -> None:
    if not segment:
        raise WikiInvalid("The path has an empty part (a leading, trailing or double '/').")
    if len(segment) > MAX_SEGMENT_CHARS:
        raise WikiInvalid(f"A part of the path is longer than {MAX_SEGMENT_CHARS} characters.")
    for char in segment:
        category = unicodedata.category(char)
        if char in _RESERVED_CHARS or category in _REFUSED_CATEGORIES \
                or (category == "Zs" and char != " ") or _IGNORABLE.match(char):
            raise WikiInvalid(f"The path may not contain {char!r} (U+{ord(char):04X}).")
    # Judged as a file system that folds width and case would see it: "．git", "GIT~1".
    folded = unicodedata.normalize("NFKC", segment).casefold()
    if folded[0] in "-." or folded[-1] in " .":
        raise WikiInvalid(f"{segment!r}: a part of the path may not start with '-' or '.', "
                          "nor end with a space or '.'.")
    if _SHORT_NAME.match(folded) or folded.split(".", 1)[0] in _DEVICE_NAMES:
        raise WikiInvalid(f"{segment!r} is a reserved name.")

def folder_key(name: str) -> str:
    """The key two names of one folder may not share: NFKC, case-folded (``Home.md`` and
    ``home.md`` are one page on case-insensitive file systems and to people)."""
    return unicodedata.normalize("NFKC", name).casefold()
