"""The offline model's script format, shared by ScriptedProvider and the fakellm server.

A script is the most recent message written by a person (tool results do not count) whose whole
text is a JSON object ``{"script": [step, ...]}``. Steps:

- ``{"thinking": "..."}``: reasoning text;
- ``{"text": "..."}``: answer text;
- ``{"tool_call": {"name": "...", "arguments": {...}}}``: one client tool call;
- ``{"sources": [{"url": "...", "title": "..."}, ...]}``: the answer cites these pages, in the
  protocol's own form (Anthropic ``citations_delta`` of ``web_search_result_location``,
  OpenAI-compatible ``url_citation`` annotations, Gemini ``groundingMetadata``), as a search
  would (the demo's sources);
- ``{"error": {"status": 529, "in_stream": false, "message": "...", "retry_after": 0}}``: fail
  this request with that HTTP status (or, with ``in_stream: true``, inside a 200 stream), with
  an optional message and ``Retry-After`` header; the retry plays the turn's remaining steps.

Steps are cut into model turns after each run of consecutive ``tool_call`` steps (one run is one
parallel batch). The k-th request after the script message plays turn k, k being the number of
assistant messages since that message.

Error steps cut a turn into segments. The n-th request for the same turn plays segment n: its
steps, then its closing error (an HTTP error replaces the whole response; an in-stream error
follows the segment's streamed steps). So a retry plays the steps after the error that failed
the previous attempt, even when the history changed in between (a compaction). A
:class:`ScriptPlayer` counts the requests per (script text, turn) and forgets the count once the
turn's last segment has played, so the same script sent again fails again. One consequence: a
request that failed on an error step and was never retried leaves its count behind, so the same
script sent again (in a new run) plays the segment after that error. Send a script with a new
text (add a step) to see the error again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from apps.engine.messages import Message

__all__ = [
    "Script",
    "ScriptPlayer",
    "Step",
    "find_script",
    "parse_script",
    "pieces",
    "split_turns",
]

Step = dict[str, Any]

_KINDS = ("thinking", "text", "tool_call", "sources", "error")


def _valid_step(step: Any) -> bool:
    if not (isinstance(step, dict) and len(step) == 1):
        return False
    (kind, value), = step.items()
    if kind in ("thinking", "text"):
        return isinstance(value, str)
    if kind == "tool_call":
        return (isinstance(value, dict) and isinstance(value.get("name"), str)
                and isinstance(value.get("arguments", {}), dict))
    if kind == "error":
        return isinstance(value, dict) and isinstance(value.get("status", 500), int)
    if kind == "sources":
        return isinstance(value, list) and all(
            isinstance(s, dict) and isinstance(s.get("url"), str)
            and isinstance(s.get("title", ""), str) for s in value)
    return False


_AUTHOR_LABEL = re.compile(r"\s*\[[^\]\n]{1,200}\]\s*")


_MENTION = re.compile(r"\s*@[\w-]{1,30}\s+")


def parse_script(text: str) -> list[Step] | None:
    """The steps of ``text`` if it is exactly a script object with valid steps, else None.
    A leading ``[name]`` author label (how a room shows the model who wrote) is skipped, and
    then a leading ``@name`` (the mention that called the agent, e.g. ``@agent {"script":
    ...}`` in a room where the agent answers when mentioned)."""
    for prefix in (_AUTHOR_LABEL, _MENTION):
        if (found := prefix.match(text)) is not None:
            text = text[found.end() :]
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return None
    steps = document.get("script") if isinstance(document, dict) else None
    if not isinstance(steps, list) or not all(_valid_step(s) for s in steps):
        return None
    return steps


def split_turns(steps: list[Step]) -> list[list[Step]]:
    """Cut ``steps`` into model turns after each run of consecutive tool calls."""
    turns: list[list[Step]] = []
    current: list[Step] = []
    for i, step in enumerate(steps):
        current.append(step)
        following = steps[i + 1] if i + 1 < len(steps) else None
        if "tool_call" in step and (following is None or "tool_call" not in following):
            turns.append(current)
            current = []
    if current:
        turns.append(current)
    return turns


@dataclass(frozen=True, slots=True)
class Script:
    """The script in force for a request: its ``turns`` and which one to play (``turn``:
    0-based; ``None`` past the end, when the script has nothing more to say)."""

    turns: list[list[Step]]
    turn: int | None
    source: str = ""  # the script message's text, which identifies the script

    def steps(self) -> list[Step]:
        """The steps of the current turn (empty past the end)."""
        return [] if self.turn is None else self.turns[self.turn]


def _last_words(message: Message) -> str | None:
    """The last thing a person wrote in ``message``: its last text block that is not just an
    author label. Providers merge consecutive user messages into one turn (Anthropic, Gemini),
    so several people's messages can share one message here; the latest one counts."""
    for block in reversed(message.content):
        text = getattr(block, "text", None)
        if block.type == "text" and text and not _AUTHOR_LABEL.fullmatch(text):
            return text
    return None


def find_script(messages: list[Message]) -> Script | None:
    """The script of the latest person-written message in ``messages``, or None."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        words = _last_words(message) if message.role == "user" else None
        if words is None:
            continue  # tool results (in user or tool messages) do not count
        steps = parse_script(words)
        if steps is None:
            return None
        turns = split_turns(steps)
        k = sum(1 for m in messages[position + 1 :] if m.role == "assistant")
        return Script(turns=turns, turn=k if k < len(turns) else None, source=words)
    return None


def segment(steps: list[Step], attempt: int) -> tuple[list[Step], Step | None]:
    """The steps request number ``attempt`` (0-based) of a turn plays, and the error step that
    ends it (None when the segment runs to the end of the turn)."""
    segments: list[tuple[list[Step], Step | None]] = []
    current: list[Step] = []
    for step in steps:
        if "error" in step:
            segments.append((current, step))
            current = []
        else:
            current.append(step)
    segments.append((current, None))
    return segments[min(attempt, len(segments) - 1)]


class ScriptPlayer:
    """Decides what the offline model says to a request, remembering retries per turn."""

    def __init__(self) -> None:
        self._attempts: dict[tuple[str, int | None], int] = {}

    def play(self, messages: list[Message]) -> tuple[list[Step], Step | None] | None:
        """``(steps, closing error step or None)`` for this request, or None without a script."""
        script = find_script(messages)
        if script is None:
            return None
        key = (script.source, script.turn)
        attempt = self._attempts.get(key, 0)
        steps, error = segment(script.steps(), attempt)
        if error is None:
            self._attempts.pop(key, None)  # the turn is over: a resend starts afresh
        else:
            self._attempts[key] = attempt + 1
        return steps, error


def pieces(text: str) -> list[str]:
    """``text`` in word-sized pieces (a space starts a piece), the way a model streams tokens;
    joined they give ``text`` back exactly."""
    out: list[str] = []
    start = 0
    for i, char in enumerate(text):
        if char == " " and i > start:
            out.append(text[start:i])
            start = i
    if start < len(text):
        out.append(text[start:])
    return out
