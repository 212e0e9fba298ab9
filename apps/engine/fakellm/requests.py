"""Read the conversation out of each protocol's request body, as far as scripts need it.

Only who wrote what matters here: a person's text, a tool result (which does not count as a
person's message), and assistant turns (which count the script's turns).
"""

from __future__ import annotations

from typing import Any

from apps.engine.messages import Message, TextBlock, ToolResultBlock

__all__ = ["anthropic_messages", "gemini_messages", "openai_messages"]


def _user(texts: list[str], results: int) -> Message:
    blocks: list[Any] = [TextBlock(text=t) for t in texts]
    blocks += [ToolResultBlock(tool_use_id=f"r{i}") for i in range(results)]
    return Message(role="user", content=blocks)


def _texts(content: Any, text_types: tuple[str, ...] = ("text",)) -> tuple[list[str], int]:
    """Texts and the number of tool results in a list of blocks/parts (or a plain string)."""
    if isinstance(content, str):
        return [content], 0
    texts, results = [], 0
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") in text_types and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_result" or "functionResponse" in block:
            results += 1
        elif "text" in block and "type" not in block and not block.get("thought"):
            texts.append(block["text"])  # a Gemini text part
    return texts, results


def anthropic_messages(body: dict[str, Any]) -> list[Message]:
    """Messages of an Anthropic Messages request."""
    out: list[Message] = []
    for message in body.get("messages", []):
        if message.get("role") == "assistant":
            out.append(Message(role="assistant", content="…"))
        else:
            out.append(_user(*_texts(message.get("content"))))
    return out


def openai_messages(body: dict[str, Any]) -> list[Message]:
    """Messages of an OpenAI Chat Completions request."""
    out: list[Message] = []
    for message in body.get("messages", []):
        role = message.get("role")
        if role == "assistant":
            out.append(Message(role="assistant", content="…"))
        elif role == "tool":
            out.append(_user([], 1))
        elif role == "user":
            out.append(_user(*_texts(message.get("content"))))
    return out


def gemini_messages(body: dict[str, Any]) -> list[Message]:
    """Messages of a Gemini generateContent request."""
    out: list[Message] = []
    for content in body.get("contents", []):
        if content.get("role") == "model":
            out.append(Message(role="assistant", content="…"))
        else:
            out.append(_user(*_texts(content.get("parts"))))
    return out
