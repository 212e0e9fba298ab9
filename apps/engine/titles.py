"""A conversation's title, proposed by the model in one small call after the first exchange.

The request is plain text (the first message and the start of the answer), no tools, a few
tokens of output. Its user turn starts with :data:`TITLE_INSTRUCTION`, which is also how the
offline model (the scripted provider and fakellm) knows it is asked for a title: it answers with
the first words of the first message (:func:`offline_title`).
"""

from __future__ import annotations

from contextlib import aclosing

from apps.engine.events import ContentDelta
from apps.engine.messages import ChatRequest, Message
from apps.engine.providers.base import AiProvider

__all__ = ["TITLE_INSTRUCTION", "TITLE_MAX_CHARS", "first_words", "offline_title",
           "propose_title"]

TITLE_INSTRUCTION = "Write a short title for the conversation that starts like this."
TITLE_MAX_CHARS = 80
"""The longest title proposed (characters); a longer reply is cut at a word."""

_SYSTEM = ("You name conversations. Answer with the title only: at most eight words, in the "
           "language of the conversation, no quotes, no final full stop.")
_QUOTED = 2000  # characters of each side sent: a title needs the start only
_FIRST_WORDS = 6
_UNSPACED = 16
_OPENER = "\n\nFirst message:\n"
_ANSWER = "\n\nAnswer:\n"


def first_words(text: str, count: int = _FIRST_WORDS) -> str:
    """The first ``count`` words of ``text`` on one line, cut to :data:`TITLE_MAX_CHARS`; a
    first word longer than ``_UNSPACED`` characters (Chinese or Japanese, written without
    spaces) is cut to that many characters."""
    words = text.split()
    if words and len(words[0]) > _UNSPACED:
        return words[0][:_UNSPACED]
    return _fit(" ".join(words[:count]))


def _fit(text: str) -> str:
    """``text`` on one line, at most :data:`TITLE_MAX_CHARS`, cut at a word where it has them."""
    line = " ".join(text.split())
    if len(line) <= TITLE_MAX_CHARS:
        return line
    cut = line[:TITLE_MAX_CHARS]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def _request(model: str, first: str, answer: str) -> ChatRequest:
    prompt = f"{TITLE_INSTRUCTION}{_OPENER}{first[:_QUOTED]}{_ANSWER}{answer[:_QUOTED]}"
    return ChatRequest(model=model, system=_SYSTEM, max_tokens=60,
                       messages=[Message(role="user", content=prompt)])


def offline_title(messages: list[Message]) -> str | None:
    """What the offline model answers to a title request (the first words of its first
    message), or None when ``messages`` are not one."""
    if not messages or messages[-1].role != "user":
        return None
    text = messages[-1].text()
    if not text.startswith(TITLE_INSTRUCTION + _OPENER):
        return None
    first = text[len(TITLE_INSTRUCTION + _OPENER):].split(_ANSWER, 1)[0]
    return first_words(first) or None


async def propose_title(provider: AiProvider, model: str, *, first: str, answer: str
                        ) -> str | None:
    """The model's title for a conversation that starts with ``first`` (a person's message)
    and ``answer`` (the agent's), cleaned to one line of at most :data:`TITLE_MAX_CHARS`
    without surrounding quotes; None when the reply is empty. Raises what the provider raises
    (ProviderError)."""
    pieces: list[str] = []
    async with aclosing(provider.stream_chat(_request(model, first, answer))) as stream:
        async for event in stream:
            if isinstance(event, ContentDelta):
                pieces.append(event.text)
    title = _fit("".join(pieces).strip().strip("\"'“”「」『』").rstrip("."))
    return title or None
