"""Read: a file of the workspace, numbered like ``cat -n``, a line range at a time.

Text is UTF-8 (a byte order mark is dropped; a stray invalid byte after the first 8 KiB shows as
U+FFFD). A file whose first 8 KiB hold a NUL byte or are not UTF-8 is reported as binary rather
than dumped; PNG, JPEG, GIF and WebP images (recognised by their magic bytes) come back as an
image block. The output never exceeds ``ToolEnvironment.max_result_chars``: Read stops early and
says which ``offset`` continues, so a read is never itself diverted to result storage.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import os
from pathlib import Path
from typing import Any, BinaryIO

from apps.engine.errors import ToolError
from apps.engine.messages import ImageBlock, TextBlock
from apps.engine.tools.base import (
    DEFAULT_MAX_RESULT_CHARS,
    BaseTool,
    Concurrency,
    ToolContext,
    ToolOutput,
    ToolSpec,
)
from apps.engine.tools.mounts import ReadOnlyMounts
from apps.engine.tools.workspace import locate, open_in_workspace

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_IMAGE_BYTES",
    "MAX_LINE_CHARS",
    "ReadTool",
    "format_line",
    "looks_binary",
    "open_existing",
]

DEFAULT_LIMIT = 2000
"""Lines shown when the model gives no ``limit``."""

MAX_LINE_CHARS = 2000
"""A longer line is cut here, with a note of how much was left out."""

MAX_IMAGE_BYTES = 3_750_000
"""Anthropic accepts images up to 5 MB of base64, which is 3.75 MB of bytes
(https://docs.anthropic.com/en/docs/build-with-claude/vision)."""

SAMPLE_BYTES = 8192
_FOOTER_RESERVE = 200  # room kept under max_result_chars for the "continue at" note

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

DESCRIPTION = f"""\
Reads a file from the workspace. file_path is relative to the workspace root (an absolute path \
inside the workspace also works).

- By default reads up to {DEFAULT_LIMIT} lines from the start of the file. For long files, pass \
offset (the 1-based line number to start at) and limit (how many lines) to read a range.
- Output is numbered like `cat -n`: each line is the line number, a tab, then the line. The \
number and tab are not part of the file: leave them out of Edit's old_string.
- Lines longer than {MAX_LINE_CHARS} characters are truncated. A read stops before \
{DEFAULT_MAX_RESULT_CHARS:,} characters of output and says which offset continues.
- Images (PNG, JPEG, GIF, WebP) are returned as images. Other binary files are refused.
- Directories cannot be read: use Glob (or Bash `ls`) to list files."""


class ReadTool(BaseTool):
    """``Read {file_path, offset?, limit?}``."""

    spec = ToolSpec(
        name="Read",
        description=DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The file to read."},
                "offset": {"type": "integer", "minimum": 1,
                           "description": "The 1-based line number to start reading at."},
                "limit": {"type": "integer", "minimum": 1,
                          "description": "The number of lines to read (default 2000)."},
            },
            "required": ["file_path"],
            "additionalProperties": False,
        },
        concurrency=Concurrency.ALWAYS,
    )

    def prepare_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Forgive the usual slips: ``null`` for "not given", numbers sent as strings or
        floats, and ``offset: 0`` (taken as the first line)."""
        args = {k: v for k, v in arguments.items() if v is not None}
        for key in ("offset", "limit"):
            value = args.get(key)
            whole_text = isinstance(value, str) and value.strip().isdigit()
            if whole_text or (isinstance(value, float) and value.is_integer()):
                args[key] = int(value)
        if args.get("offset") == 0:
            args["offset"] = 1
        return args

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        args = ctx.arguments
        return await asyncio.to_thread(
            read_file, ctx.workspace, args["file_path"], args.get("offset", 1),
            args.get("limit", DEFAULT_LIMIT), ctx.env.max_result_chars, ctx.mounts,
        )


def read_file(workspace: Path, file_path: str, offset: int, limit: int,
              max_chars: int, mounts: ReadOnlyMounts | None = None) -> ToolOutput:
    """Lines ``offset`` .. ``offset + limit - 1`` of ``file_path``, numbered, at most
    ``max_chars`` characters; an image as blocks. ``mounts``: the run's read-only mounts
    (``wiki/...`` reads the wiki's snapshot). Raises ToolError (not found, directory, binary,
    outside the workspace, offset past the end)."""
    where = locate(workspace, file_path, mounts)
    shown = where.shown
    with open_existing(where.root, where.real, shown) as f:
        sample = f.read(SAMPLE_BYTES)
        if not sample:
            return ToolOutput(f"The file {shown} exists but is empty.")
        media_type = image_type(sample)
        if media_type is not None:
            return _image_output(f, shown, media_type)
        if looks_binary(sample):
            raise ToolError(
                f"{shown} looks like a binary file (or text that is not UTF-8), so Read does "
                "not show it. Use Bash (`file`, `xxd`, `iconv`) to inspect it."
            )
        f.seek(0)
        return ToolOutput(_numbered_range(f, shown, offset, limit, max_chars))


def open_existing(workspace: Path, path: Path, shown: str) -> BinaryIO:
    """Open an existing workspace file for reading, with messages for the model (not found,
    directory)."""
    try:
        return open_in_workspace(workspace, path)
    except FileNotFoundError as e:
        raise ToolError(f"File not found: {shown}") from e
    except IsADirectoryError as e:
        raise ToolError(
            f"{shown} is a directory, not a file. Use Glob to list its files (or Bash `ls`)."
        ) from e


def image_type(sample: bytes) -> str | None:
    """The media type of a PNG, JPEG, GIF or WebP image from its first bytes, else None."""
    for magic, media_type in _IMAGE_MAGIC:
        if sample.startswith(magic):
            return media_type
    if sample[:4] == b"RIFF" and sample[8:12] == b"WEBP":
        return "image/webp"
    return None


def looks_binary(sample: bytes) -> bool:
    """Whether a file's first bytes hold a NUL byte or are not valid UTF-8 (a character cut at
    the end of the sample does not count)."""
    if b"\x00" in sample:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return True
    return False


def _image_output(f: BinaryIO, shown: str, media_type: str) -> ToolOutput:
    size = os.fstat(f.fileno()).st_size
    if size > MAX_IMAGE_BYTES:
        raise ToolError(
            f"{shown} is an image of {size:,} bytes, larger than the {MAX_IMAGE_BYTES:,} bytes "
            "that can be shown."
        )
    f.seek(0)
    data = base64.b64encode(f.read()).decode("ascii")
    note = TextBlock(text=f"Image {shown} ({media_type}, {size:,} bytes).")
    return ToolOutput([note, ImageBlock(media_type=media_type, data=data)])


def format_line(number: int, text: str) -> str:
    """One output line as ``cat -n`` prints it (number right-aligned in 6, a tab), cut at
    :data:`MAX_LINE_CHARS`."""
    if len(text) > MAX_LINE_CHARS:
        cut = len(text) - MAX_LINE_CHARS
        text = f"{text[:MAX_LINE_CHARS]}… [line truncated: {cut:,} more characters]"
    return f"{number:>6}\t{text}"


def _numbered_range(f: BinaryIO, shown: str, offset: int, limit: int, max_chars: int) -> str:
    """The numbered lines of the range, then a note if more of the file follows."""
    lines, last = _collect(f, offset, limit, max(max_chars - _FOOTER_RESERVE, 1))
    total = last + _count_rest(f)
    if not lines:
        raise ToolError(
            f"offset {offset} is past the end of {shown}, which has {total:,} lines."
        )
    text = "\n".join(lines)
    if last < total:
        text += (f"\n\n[Showing lines {offset}-{last} of {total:,}. "
                 f"Call Read with offset={last + 1} to continue.]")
    return text


def _collect(f: BinaryIO, offset: int, limit: int, budget: int) -> tuple[list[str], int]:
    """Formatted lines from ``offset``, stopping after ``limit`` lines or before ``budget``
    characters; also the number of the last line shown (or, past the end, of the last line).
    Leaves ``f`` just after that line."""
    lines: list[str] = []
    used = 0
    number = 0
    for number, raw in enumerate(f, 1):
        if number < offset:
            continue
        line = format_line(number, _decode_line(raw, first=number == 1))
        if lines and used + len(line) + 1 > budget:
            f.seek(-len(raw), os.SEEK_CUR)  # leave the unshown line to _count_rest
            return lines, number - 1
        lines.append(line)
        used += len(line) + 1
        if len(lines) == limit:
            return lines, number
    return lines, number


def _count_rest(f: BinaryIO) -> int:
    """Lines left in ``f`` from its position (a last line without a newline counts)."""
    count = 0
    last = b"\n"
    while chunk := f.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _decode_line(raw: bytes, *, first: bool) -> str:
    text = raw.decode("utf-8", errors="replace")
    if first:
        text = text.removeprefix("\ufeff")
    return text.rstrip("\r\n")
