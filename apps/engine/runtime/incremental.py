"""Per-step views of the history that cost only what was appended since the last step.

A run's history grows at its end; recomputing token estimates or the model's view of every
message at every step would make a long run quadratic. These caches extend themselves with the
new messages and start over when the history was rewritten (compaction replaces its head).
"""

from __future__ import annotations

from apps.engine.compaction.tokens import estimate_message
from apps.engine.messages import Message, TextBlock

__all__ = ["ModelView", "TokenCounter", "shown_to_model"]


class _AppendOnly:
    """Remembers which prefix of a list it has processed, by the identity of its ends."""

    def __init__(self) -> None:
        self._count = 0
        self._head: Message | None = None
        self._tail: Message | None = None

    def _valid(self, history: list[Message]) -> int:
        n = self._count
        if n > len(history) or (n and (history[0] is not self._head
                                       or history[n - 1] is not self._tail)):
            return 0
        return n

    def _mark(self, history: list[Message]) -> None:
        self._count = len(history)
        self._head = history[0] if history else None
        self._tail = history[-1] if history else None


class TokenCounter(_AppendOnly):
    """Token estimates of a history (DESIGN 2.6), kept as prefix sums."""

    def __init__(self) -> None:
        super().__init__()
        self._prefix = [0]

    def tokens(self, history: list[Message], anchor_tokens: int | None = None,
               anchor_index: int = 0) -> int:
        """``anchor_tokens`` plus the estimate of ``history[anchor_index:]``; without an anchor,
        the estimate of the whole history."""
        valid = self._valid(history)
        del self._prefix[valid + 1 :]
        for message in history[valid:]:
            self._prefix.append(self._prefix[-1] + estimate_message(message))
        self._mark(history)
        if anchor_tokens is None:
            return self._prefix[-1]
        return anchor_tokens + self._prefix[-1] - self._prefix[anchor_index]


def shown_to_model(message: Message) -> Message:
    """A person's message starts with ``[name]`` in a text block of its own, so the model knows
    who said what (and a script stays a whole block); other messages are shown as they are."""
    if message.role != "user" or message.author is None:
        return message
    label = TextBlock(text=f"[{message.author.name}]")
    return message.model_copy(update={"content": [label, *message.content]})


class ModelView(_AppendOnly):
    """The history as the model sees it (see :func:`shown_to_model`)."""

    def __init__(self) -> None:
        super().__init__()
        self._shown: list[Message] = []

    def messages(self, history: list[Message]) -> list[Message]:
        """The shown history; a new list each call (a request keeps its own)."""
        valid = self._valid(history)
        del self._shown[valid:]
        self._shown.extend(shown_to_model(m) for m in history[valid:])
        self._mark(history)
        return list(self._shown)
