"""A server's MCP prompts: listed for the composer's slash commands, expanded into a message.

Spec: "Prompts" (``server/prompts``, protocol 2025-11-25): ``prompts/list`` is paginated and
gives each prompt's ``name``, ``title``, ``description`` and ``arguments`` (``name``,
``description``, ``required``; values are strings); ``prompts/get`` with the arguments answers
``messages``, each a role and one content block. A server offers them when it declares the
``prompts`` capability.
"""

from __future__ import annotations

from dataclasses import dataclass

import mcp_types as types

from apps.engine.mcp.adapter import content_block
from apps.engine.messages import ImageBlock, TextBlock

__all__ = ["PromptArgumentInfo", "PromptInfo", "missing_arguments", "prompt_blocks"]


@dataclass(frozen=True, slots=True)
class PromptArgumentInfo:
    """One argument of a prompt: ``name``, ``description``, ``required``."""

    name: str
    description: str
    required: bool


@dataclass(frozen=True, slots=True)
class PromptInfo:
    """A prompt of ``server`` as the composer offers it: ``/<server>:<name>``."""

    server: str
    name: str
    title: str
    description: str
    arguments: tuple[PromptArgumentInfo, ...]

    @classmethod
    def of(cls, server: str, prompt: types.Prompt) -> PromptInfo:
        """The info of ``prompt`` as ``server`` listed it."""
        return cls(server=server, name=prompt.name, title=prompt.title or prompt.name,
                   description=prompt.description or "",
                   arguments=tuple(PromptArgumentInfo(a.name, a.description or "",
                                                      bool(a.required))
                                   for a in prompt.arguments or ()))


def missing_arguments(prompt: PromptInfo, arguments: dict[str, str]) -> list[str]:
    """The required arguments of ``prompt`` that ``arguments`` leaves out or blank."""
    return [a.name for a in prompt.arguments
            if a.required and not (arguments.get(a.name) or "").strip()]


def prompt_blocks(result: types.GetPromptResult) -> list[TextBlock | ImageBlock]:
    """The expanded prompt as a message's blocks, in order; a message of another role than
    ``user`` is marked (``[assistant]``) so the model reads the prompt as the server wrote it."""
    blocks: list[TextBlock | ImageBlock] = []
    for message in result.messages:
        block = content_block(message.content)
        if message.role != "user" and isinstance(block, TextBlock):
            block = TextBlock(text=f"[{message.role}] {block.text}")
        blocks.append(block)
    return blocks
