"""Provider adapters: one module per wire protocol, registered here by dotted path."""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["PROTOCOLS", "provider_class", "tool_param", "translator_class"]

# protocol -> (provider class, stream translator class), by dotted path so that importing the
# registry does not import every adapter.
PROTOCOLS: dict[str, tuple[str, str]] = {
    "anthropic": (
        "apps.engine.providers.anthropic.AnthropicProvider",
        "apps.engine.providers.anthropic.AnthropicTranslator",
    ),
    "openai": (
        "apps.engine.providers.openai_compat.OpenAICompatProvider",
        "apps.engine.providers.openai_compat.OpenAITranslator",
    ),
    "gemini": (
        "apps.engine.providers.gemini.GeminiProvider",
        "apps.engine.providers.gemini.GeminiTranslator",
    ),
}


# protocol -> the function that writes one ToolDefinition in that protocol's request form.
TOOL_PARAMS: dict[str, str] = {
    "anthropic": "apps.engine.providers.anthropic.request.tool_param",
    "openai": "apps.engine.providers.openai_compat.tool_param",
    "gemini": "apps.engine.providers.gemini.request.tool_param",
}


def _load(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(import_module(module), name)


def _entry(protocol: str) -> tuple[str, str]:
    try:
        return PROTOCOLS[protocol]
    except KeyError:
        raise ValueError(
            f"unknown provider protocol {protocol!r}; expected one of {sorted(PROTOCOLS)}"
        ) from None


def provider_class(protocol: str) -> Any:
    """The adapter class for ``protocol`` ("anthropic", "openai", "gemini"); ValueError if none."""
    return _load(_entry(protocol)[0])


def translator_class(protocol: str) -> Any:
    """The stream translator class for ``protocol``; ValueError if none."""
    return _load(_entry(protocol)[1])


def tool_param(protocol: str) -> Any:
    """``ToolDefinition -> dict`` for ``protocol``'s request body; ValueError if unknown."""
    _entry(protocol)
    return _load(TOOL_PARAMS[protocol])
