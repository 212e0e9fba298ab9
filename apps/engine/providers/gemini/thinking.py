"""ReasoningParams -> Gemini ``generationConfig.thinkingConfig`` (DESIGN 2.1, 2.3).

Rules, from https://ai.google.dev/gemini-api/docs/thinking and
https://ai.google.dev/gemini-api/docs/gemini-3:

- Gemini 2.5 takes ``thinkingBudget`` (tokens; ``-1`` = dynamic, ``0`` = off). Flash and
  Flash-Lite can turn thinking off; 2.5 Pro cannot (its smallest budget is 128).
- Gemini 3 takes ``thinkingLevel`` (``minimal``/``low``/``medium``/``high``); thinking cannot be
  turned off, ``minimal`` (Flash) or ``low`` (Pro, which has no ``minimal``) is the least.
  ``thinkingBudget`` is still accepted for compatibility, but never together with a level
  (400), so exactly one of the two is sent.
- confab's caps (DESIGN 2.3): a budget is at most 24576 on Flash models, 65536 otherwise, and
  at most half of ``maxOutputTokens`` so the answer keeps room. One correction to DESIGN:
  Gemini 2.5 Pro documents a range of 128-32768, so 32768 is its cap (a larger budget is a 400).
- ``includeThoughts`` asks for thought summaries (``thought: true`` parts); it follows
  ``ReasoningParams.include_thoughts`` and defaults to on whenever thinking is on.
"""

from __future__ import annotations

import re
from typing import Any

from apps.engine.messages import ReasoningParams

__all__ = ["FLASH_BUDGET_CAP", "BUDGET_CAP", "budget_cap", "is_gemini3", "thinking_config"]

FLASH_BUDGET_CAP = 24576
PRO_25_BUDGET_CAP = 32768
BUDGET_CAP = 65536
PRO_MIN_BUDGET = 128  # Gemini 2.5 Pro cannot disable thinking; this is its smallest budget

_EFFORT_LEVELS = {
    "none": "minimal", "minimal": "minimal", "low": "low", "medium": "medium",
    "high": "high", "xhigh": "high", "max": "high",
}


def is_gemini3(model: str) -> bool:
    """Gemini 3 or later (``gemini-3-pro-preview``, ``gemini-3.1-pro-preview``, ...)."""
    match = re.search(r"gemini-(\d+)", model.lower())
    return bool(match) and int(match.group(1)) >= 3


def _is_flash(model: str) -> bool:
    return "flash" in model.lower()


def budget_cap(model: str, max_output_tokens: int | None) -> int:
    """The largest thinking budget confab sends for ``model``: 24576 (Flash), 32768 (2.5 Pro)
    or 65536, and at most ``max_output_tokens // 2``."""
    if _is_flash(model):
        cap = FLASH_BUDGET_CAP
    elif "2.5-pro" in model.lower():
        cap = PRO_25_BUDGET_CAP
    else:
        cap = BUDGET_CAP
    if max_output_tokens:
        cap = min(cap, max_output_tokens // 2)
    return cap


def thinking_config(model: str, params: ReasoningParams | None,
                    max_output_tokens: int | None) -> dict[str, Any] | None:
    """The ``thinkingConfig`` object for ``model``, or None to leave the model's default.

    Shape: ``{"thinkingBudget": int}`` or ``{"thinkingLevel": str}``, plus ``includeThoughts``.
    ``thinking_type="disabled"`` (or a budget of 0, or effort ``none`` on 2.5) turns thinking
    off where the model allows it and asks for the least thinking where it does not.
    """
    if params is None:
        return None
    if _wants_off(model, params):
        return _off(model)
    config: dict[str, Any] = {}
    level = params.thinking_level or _EFFORT_LEVELS.get(params.effort or "")
    if is_gemini3(model) and level:
        config["thinkingLevel"] = _supported_level(model, level)
    elif params.thinking_budget is not None:
        config["thinkingBudget"] = min(params.thinking_budget, budget_cap(model, max_output_tokens))
    elif params.thinking_type in ("enabled", "adaptive") and not is_gemini3(model):
        config["thinkingBudget"] = -1  # dynamic: the model sizes its thinking to the prompt
    thinking_on = bool(config) or params.thinking_type in ("enabled", "adaptive")
    include = params.include_thoughts if params.include_thoughts is not None else thinking_on
    if include or params.include_thoughts is not None:
        config["includeThoughts"] = include
    return config or None


def _wants_off(model: str, params: ReasoningParams) -> bool:
    if params.thinking_type == "disabled" or params.thinking_budget == 0:
        return True
    # effort "none" means no thinking; on Gemini 3 it maps to the "minimal" level instead
    return params.effort == "none" and not is_gemini3(model) and params.thinking_level is None


def _off(model: str) -> dict[str, Any]:
    """Thinking off, or as little as the model allows."""
    if is_gemini3(model):
        return {"thinkingLevel": "minimal" if _is_flash(model) else "low"}
    if _is_flash(model):
        return {"thinkingBudget": 0}
    return {"thinkingBudget": PRO_MIN_BUDGET}


def _supported_level(model: str, level: str) -> str:
    """Gemini 3 Pro models have no ``minimal`` level; ``low`` is the nearest."""
    if level == "minimal" and not _is_flash(model):
        return "low"
    return level
