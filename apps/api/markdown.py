"""The transcript as readable Markdown (``GET /api/conversations/{id}/export.md``).

Who said what and when; thinking in a collapsed, quoted ``<details>`` block; tool calls, tool
results and provider-run tool blocks as fenced code; token usage under each answer; the runs and
the agent's changes to the team wiki at the end. Raw HTML that people, the model or tools wrote
is shown as text, never passed to the viewer (:mod:`apps.api.raw_html`; names and ids are
escaped or in code spans), and their code stays as written. Rendered one message at a time from
the same records as the JSON export, so it streams in constant memory too. Opaque artefacts
(thinking signatures, image data) are left to the JSON.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from itertools import groupby
from typing import Any

from apps.api.raw_html import escape_raw_html
from apps.api.transcript import message_records, run_records, wiki_change_records
from apps.rooms.models import Conversation

__all__ = ["RENDER_BATCH", "transcript_markdown"]

RENDER_BATCH = 100
"""Messages rendered per trip to a worker thread: showing raw HTML as text parses the Markdown
(a millisecond or more for a message with code), which must not hold the event loop."""

_BACKTICKS = re.compile(r"`+")
_LINE_BREAKS = re.compile(r"[\r\n]+")
_INLINE_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")
_ROLE_TITLES = {"assistant": "Assistant", "tool": "Tool results", "system": "System"}
_USAGE_LABELS = (
    ("input_tokens", "in"),
    ("output_tokens", "out"),
    ("cached_input_tokens", "cached"),
    ("cache_creation_input_tokens", "cache writes"),
    ("reasoning_tokens", "reasoning"),
)


async def transcript_markdown(conversation: Conversation,
                              header: dict[str, Any]) -> AsyncIterator[str]:
    """The Markdown document, piece by piece; ``header`` is
    :func:`apps.api.transcript.conversation_record` of ``conversation``."""
    yield _heading(header)
    async for batch in _batched(message_records(conversation), RENDER_BATCH):
        yield await asyncio.to_thread(lambda batch=batch: "".join(map(_message, batch)))
    async for piece in _section("## Runs\n\n", run_records(conversation), _run):
        yield piece
    async for piece in _section("\n## Wiki changes\n\n", wiki_change_records(conversation),
                                _wiki_change):
        yield piece


async def _section(title: str, records: AsyncIterator[dict[str, Any]],
                   render: Callable[[dict[str, Any]], str]) -> AsyncIterator[str]:
    """``title``, then each record rendered; nothing at all when there are no records."""
    first = True
    async for record in records:
        if first:
            yield title
            first = False
        yield render(record)


async def _batched(items: AsyncIterator[dict[str, Any]], size: int
                   ) -> AsyncIterator[list[dict[str, Any]]]:
    """``items`` in lists of up to ``size``."""
    batch: list[dict[str, Any]] = []
    async for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _escape(text: str) -> str:
    """``text`` safe inside a Markdown line (names, titles)."""
    return _INLINE_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it holds, on one line (a viewer
    shows a line break in a span as a space anyway, and a blank line would end the span)."""
    text = _LINE_BREAKS.sub(" ", text)
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fenced(text: str, info: str = "") -> str:
    """``text`` as a fenced code block longer than any backtick run inside it."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _when(value: str | None) -> str:
    if not value:
        return ""
    return datetime.fromisoformat(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _name(person: dict[str, Any] | None, default: str = "someone") -> str:
    return _escape(person["name"]) if person else default


def _heading(header: dict[str, Any]) -> str:
    room, team, origin = header["room"], header["team"], header["forked_from"]
    forked = (f" · forked from conversation {origin['conversation_id']} at message "
              f"{origin['message_id']}" if origin else "")
    return (f"# {_escape(header['title'])}\n\n"
            f"Team {_escape(team['name'])} · room {_escape(room['name'])} · "
            f"conversation {header['id']} · started by {_name(header['started_by'])} on "
            f"{_when(header['created_at'])}{forked}\n\n---\n\n")


def _message(message: dict[str, Any]) -> str:
    parts = [_message_heading(message)]
    if message["reasoning_content"]:
        parts.append(_thinking(message["reasoning_content"]))
    # Adjacent text blocks are escaped as one text: alone, the second could start with an
    # indented block that, after the first's list, would be read as the list's paragraph.
    for is_text, blocks in groupby(message["content"], key=lambda b: b.get("type") == "text"):
        if is_text:
            parts.append(escape_raw_html("\n\n".join(block["text"] for block in blocks)))
        else:
            parts.extend(_block(block) for block in blocks)
    if message.get("sources"):
        parts.append(_sources(message["sources"]))
    usage = _usage(message["usage"] or {})
    if usage:
        parts.append(usage)
    return "\n\n".join(parts) + "\n\n"


def _sources(found: list[dict[str, str]]) -> str:
    """The numbered sources list; the links are checked http(s) URLs without spaces or angle
    brackets (:mod:`apps.engine.sources`), so a ``<...>`` destination holds them whole."""
    lines = [f"{n}. [{_escape(s['title'])}](<{s['url']}>) — {_escape(s['site'])}"
             for n, s in enumerate(found, 1)]
    return "**Sources**\n\n" + "\n".join(lines)


def _message_heading(message: dict[str, Any]) -> str:
    role = message["role"]
    if role == "user":
        who = _name(message["author"])
    else:
        who = _ROLE_TITLES.get(role, _escape(role))
        if message["model"]:
            who += f" ({_escape(message['model'])})"
    flags = [message["status"]] if message["status"] != "complete" else []
    if message["compacted"]:
        flags.append("compacted")
    if message["superseded_by_run"] is not None:
        flags.append(f"earlier version, replaced by run {message['superseded_by_run']}")
    elif message["superseded_by_message"] is not None:
        flags.append(f"earlier version, replaced by message {message['superseded_by_message']}")
    tail = "".join(f" · *{flag}*" for flag in flags)
    return f"### {who} · {_when(message['created_at'])}{tail}"


def _thinking(text: str, title: str = "Thinking") -> str:
    quoted = "\n".join(f"> {line}".rstrip() for line in escape_raw_html(text).split("\n"))
    return f"<details>\n<summary>{title}</summary>\n\n{quoted}\n\n</details>"


def _block(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "thinking":
        return _thinking(block["thinking"])
    if kind == "redacted_thinking":
        return "*Thinking redacted by the provider.*"
    if kind == "image":
        label = f"image: {_escape(block.get('media_type', ''))}"
        url = block.get("url")  # an uploaded image's (apps.rooms.images); never its bytes
        return f"*[{label}](<{url}>)*" if _local(url) else f"*[{label}]*"
    if kind == "tool_use":
        return (f"**Tool call** {_code(block['name'])} · {_code(block['id'])}\n\n"
                + _fenced(_json(block.get("input", {})), "json"))
    if kind == "tool_result":
        return _tool_result(block)
    if kind == "server_tool":
        return "**Provider tool**\n\n" + _fenced(_json(block.get("raw", {})), "json")
    return _fenced(_json(block), "json")


def _tool_result(block: dict[str, Any]) -> str:
    label = "**Tool error**" if block.get("is_error") else "**Tool result**"
    name = f"{_code(block['name'])} · " if block.get("name") else ""
    content = block.get("content", "")
    if not isinstance(content, str):
        content = "\n".join(item.get("text", "") if item.get("type") == "text"
                            else f"[image: {item.get('media_type', '')}]" for item in content)
    return f"{label} {name}{_code(block['tool_use_id'])}\n\n{_fenced(content)}"


def _usage(usage: dict[str, Any]) -> str:
    counts = [f"{usage[key]} {label}" for key, label in _USAGE_LABELS if usage.get(key)]
    return f"*Tokens: {' · '.join(counts)}*" if counts else ""


def _run(run: dict[str, Any]) -> str:
    line = (f"- Run {run['id']}: {run['status']}, started by {_name(run['started_by'])} "
            f"on {_when(run['created_at'])}")
    if run["model"]:
        line += f", model {_code(run['model'])}"
    if run["reasoning"]:
        used = ", ".join(f"{k}={json.dumps(v)}" for k, v in run["reasoning"].items())
        line += f" ({_code(used)})"
    if run["stopped_by"]:
        line += f", stopped by {_name(run['stopped_by'])}"
    if run["error_message"]:
        line += f" — {_escape(run['error_message'])}"
    decisions = "".join(
        f"\n  - {_code(d['tool_name'])} {'approved' if d['approved'] else 'denied'} by "
        f"{_name(d['decided_by'])}" for d in run["decisions"])
    return f"{line}{decisions}\n"


def _wiki_change(change: dict[str, Any]) -> str:
    verb = "created" if change.get("created") else "changed"
    line = (f"- {_when(change['at'])}: {_escape(change['author'])} {verb} "
            f"{_code(change['path'])}")
    if change.get("summary"):
        line += f" — {_escape(change['summary'])}"
    line += f" (commit {_code(change['commit'][:12])}"
    links = [f"[{label}](<{change[key]}>)" for label, key in
             (("page", "page_url"), ("diff", "diff_url")) if _local(change.get(key))]
    return line + (", " + " · ".join(links) if links else "") + ")\n"


def _local(url: Any) -> bool:
    """Whether ``url`` is one of the server's own paths (only those become links)."""
    return (isinstance(url, str) and url.startswith("/") and not url.startswith("//")
            and not any(c in url for c in "<> \n"))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)
