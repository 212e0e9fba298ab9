"""Map a ChatRequest to the body of ``POST /v1/messages``
(https://platform.claude.com/docs/en/api/messages)."""

from __future__ import annotations

from typing import Any

from apps.engine.messages import ChatRequest, ReasoningParams, ToolDefinition
from apps.engine.providers.anthropic.history import serialize_history

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_THINKING_BUDGET",
    "MIN_THINKING_BUDGET",
    "SERVER_TOOLS",
    "build_body",
    "reasoning_fields",
    "tool_param",
]

# Anthropic requires max_tokens; every current model accepts at least this many output tokens.
DEFAULT_MAX_TOKENS = 8192
# https://platform.claude.com/docs/en/build-with-claude/extended-thinking: budget_tokens is at
# least 1024 and less than max_tokens.
MIN_THINKING_BUDGET = 1024
DEFAULT_THINKING_BUDGET = 4096
# https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool: the basic
# version, accepted by every model and platform (later versions add dynamic filtering, which
# needs code execution and newer models).
SERVER_TOOLS: dict[str, dict[str, str]] = {
    "web_search": {"type": "web_search_20250305", "name": "web_search"},
}
# https://platform.claude.com/docs/en/build-with-claude/effort: low, medium, high, xhigh, max.
# "minimal" maps to the nearest Anthropic level; "none" has no Anthropic equivalent: dropped.
_EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high",
            "xhigh": "xhigh", "max": "max"}


def build_body(request: ChatRequest) -> dict[str, Any]:
    """The JSON body for ``request``.

    - ``system``: the request's system prompt, then leading system-role messages, joined by a
      blank line, top level (Anthropic has no system role in ``messages``);
    - ``messages``: the history as :func:`serialize_history` shapes it;
    - ``tools``: client tools as ``{name, description, input_schema}``, then the server tools
      of ``request.server_tools`` that Anthropic runs (``web_search``; others are ignored);
    - ``max_tokens``, ``thinking``, ``output_config``: :func:`reasoning_fields`;
    - ``temperature``: only without thinking, which rejects it (extended-thinking docs);
    - ``cache_control``: automatic prompt caching unless ``disable_context_caching``
      (https://platform.claude.com/docs/en/build-with-claude/prompt-caching).
    """
    system_parts, messages = serialize_history(request.messages)
    if request.system:
        system_parts.insert(0, request.system)
    body: dict[str, Any] = {"model": request.model, "messages": messages, "stream": True}
    if system_parts:
        body["system"] = "\n\n".join(system_parts)
    tools = [tool_param(t) for t in request.tools]
    tools += [dict(SERVER_TOOLS[name]) for name in request.server_tools if name in SERVER_TOOLS]
    if tools:
        body["tools"] = tools
    body.update(reasoning_fields(request.reasoning, request.max_tokens))
    thinking = body.get("thinking", {}).get("type")
    if request.temperature is not None and thinking not in ("enabled", "adaptive"):
        body["temperature"] = request.temperature
    if not (request.reasoning and request.reasoning.disable_context_caching):
        body["cache_control"] = {"type": "ephemeral"}
    return body


def tool_param(tool: ToolDefinition) -> dict[str, Any]:
    """An OpenAI-form tool as Anthropic's ``{name, description, input_schema}``
    (https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools)."""
    schema = dict(tool.parameters)
    schema.setdefault("type", "object")  # input_schema.type is required and must be "object"
    param: dict[str, Any] = {"name": tool.name, "input_schema": schema}
    if tool.description:
        param["description"] = tool.description
    return param


def reasoning_fields(params: ReasoningParams | None, max_tokens: int | None) -> dict[str, Any]:
    """``max_tokens`` plus ``thinking`` and ``output_config`` for ``params``.

    - ``thinking_type`` "enabled" (or a positive ``thinking_budget`` alone):
      ``{type: enabled, budget_tokens}``, the budget at least 1024 and below max_tokens; an
      explicit cap wins over the budget, no cap grows to fit it (extended-thinking docs);
    - "adaptive": ``{type: adaptive}``, budget ignored
      (https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking);
    - "disabled": ``{type: disabled}``, sent explicitly because newer models think by default,
      and then no effort: Anthropic disables thinking only at the default effort, and
      Anthropic-compatible servers (DeepSeek) reject the pair (shared/cases/provider 031);
    - ``effort``: ``output_config: {effort}``
      (https://platform.claude.com/docs/en/build-with-claude/effort).
    """
    fields: dict[str, Any] = {"max_tokens": max_tokens or DEFAULT_MAX_TOKENS}
    if params is None:
        return fields
    kind = params.thinking_type
    if kind is None and params.thinking_budget:
        kind = "enabled"
    if kind == "enabled":
        fields.update(_budgeted_thinking(params.thinking_budget, max_tokens))
    elif kind in ("adaptive", "disabled"):
        fields["thinking"] = {"type": kind}
    effort = _EFFORTS.get(params.effort or "")
    if effort and kind != "disabled":
        fields["output_config"] = {"effort": effort}
    return fields


def _budgeted_thinking(budget: int | None, max_tokens: int | None) -> dict[str, Any]:
    budget = max(budget or DEFAULT_THINKING_BUDGET, MIN_THINKING_BUDGET)
    if max_tokens is None:
        # No cap asked for: the answer keeps room after the thinking.
        cap = max(DEFAULT_MAX_TOKENS, budget + DEFAULT_MAX_TOKENS // 2)
    elif max_tokens > MIN_THINKING_BUDGET:
        # The cap is the model's (or the person's) limit: the budget gives way.
        cap, budget = max_tokens, min(budget, max_tokens - 1)
    else:
        # Too small to hold the minimum budget: raise the cap just enough to think at all.
        cap, budget = 2 * MIN_THINKING_BUDGET, MIN_THINKING_BUDGET
    return {"max_tokens": cap, "thinking": {"type": "enabled", "budget_tokens": budget}}
