"""Quirk profiles of OpenAI-compatible Chat Completions servers (DESIGN 2.3).

Every server that speaks ``POST {base}/chat/completions`` differs in small ways: which token-cap
field it takes, whether it accepts ``stream_options``, how reasoning is switched on, whether
reasoning text must be echoed back. Each difference is one flag of :class:`Profile`; the request
mapper reads flags and never checks hosts or vendor names itself. A provider configuration names
its profile, or :func:`profile_for` derives it from the base URL's host.

Sources, per flag, are cited on the profile that sets it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal
from urllib.parse import urlsplit

from apps.engine.providers.base import ModelInfo

__all__ = ["PROFILES", "Profile", "ReasoningControl", "profile_for"]

ReasoningControl = Literal[
    "none",  # the server has no reasoning control we map
    "reasoning_effort",  # OpenAI top-level ``reasoning_effort``
    "deepseek_thinking",  # ``thinking: {type}`` + ``reasoning_effort``, mutually constrained
    "qwen_thinking",  # DashScope ``enable_thinking`` + ``thinking_budget``
    "openrouter_reasoning",  # OpenRouter's unified ``reasoning: {effort | max_tokens}`` object
]


def _frozen(mapping: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True, eq=False)
class Profile:
    """The flags that decide how a request is shaped for one kind of server.

    - ``max_tokens_field``: the output-cap field name.
    - ``system_role``: the role system prompts are sent with ("developer" for OpenAI).
    - ``stream_usage``: send ``stream_options: {include_usage: true}`` so the last chunk has usage.
    - ``reasoning_control`` / ``reasoning_models``: how reasoning is requested, and the model-name
      prefixes that accept it (empty: every model of the server).
    - ``effort_map``: effort values renamed for this server (others pass through unchanged; an
      empty value means the server has no such level, so no effort is sent).
    - ``verbosity_models``: model prefixes that take GPT-5 ``verbosity`` (empty: none do).
    - ``reasoning_models_reject_temperature``: drop ``temperature`` for reasoning models.
    - ``echo_reasoning_content``: assistant history carries ``reasoning_content`` while thinking
      is on (on every assistant message, "" when there was none).
    - ``thinking_default`` / ``always_thinking_models`` / ``non_thinking_default_models``: whether
      the server thinks when not told (DeepSeek V4 does), and the exceptions.
    - ``web_search``: how a web-search request is expressed (Qwen flag, OpenRouter plugin).
    - ``accepts_images``: image parts are accepted in user messages.
    - ``tool_call_id_alnum9``: tool-call ids must be exactly 9 ASCII letters/digits (Mistral).
    - ``tool_call_content``: ``content`` of an assistant message that only calls tools.
    - ``default_models``: the built-in list used when the model list cannot be fetched.
    """

    name: str
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    system_role: Literal["system", "developer"] = "system"
    stream_usage: bool = True
    reasoning_control: ReasoningControl = "none"
    reasoning_models: tuple[str, ...] = ()
    effort_map: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    verbosity_models: tuple[str, ...] = ()
    reasoning_models_reject_temperature: bool = False
    echo_reasoning_content: bool = False
    thinking_default: bool = False
    always_thinking_models: tuple[str, ...] = ()
    non_thinking_default_models: tuple[str, ...] = ()
    web_search: Literal["none", "enable_search", "openrouter_plugin"] = "none"
    accepts_images: bool = True
    tool_call_id_alnum9: bool = False
    tool_call_content: str | None = None
    default_models: tuple[ModelInfo, ...] = ()

    def is_reasoning_model(self, model: str) -> bool:
        """Whether ``model`` accepts this server's reasoning control."""
        if self.reasoning_control == "none":
            return False
        return _matches(model, self.reasoning_models) if self.reasoning_models else True

    def takes_verbosity(self, model: str) -> bool:
        """Whether ``model`` accepts GPT-5 ``verbosity``."""
        return _matches(model, self.verbosity_models)

    def thinks(self, model: str, asked: bool | None) -> bool:
        """Whether ``model`` will think; ``asked``: the caller's explicit on/off, or None."""
        if _matches(model, self.always_thinking_models):
            return True
        if asked is not None:
            return asked
        return self.thinking_default and not _matches(model, self.non_thinking_default_models)


def _matches(model: str, prefixes: tuple[str, ...]) -> bool:
    # OpenRouter-style "vendor/model" ids match on the part after the slash as well.
    bare = model.rsplit("/", 1)[-1]
    return any(model.startswith(p) or bare.startswith(p) for p in prefixes)


def _models(*ids: str) -> tuple[ModelInfo, ...]:
    return tuple(ModelInfo(id=i) for i in ids)


PROFILES: Mapping[str, Profile] = MappingProxyType({p.name: p for p in (
    # https://platform.openai.com/docs/api-reference/chat/create : max_tokens is deprecated and
    # rejected by o-series models; reasoning_effort is for o-series and GPT-5; verbosity is GPT-5;
    # reasoning models reject sampling parameters; "developer" replaces "system" messages.
    Profile(
        name="openai",
        max_tokens_field="max_completion_tokens",
        system_role="developer",
        reasoning_control="reasoning_effort",
        reasoning_models=("o1", "o3", "o4", "gpt-5"),
        effort_map=_frozen({"max": "xhigh"}),
        verbosity_models=("gpt-5",),
        reasoning_models_reject_temperature=True,
        default_models=_models("gpt-5", "gpt-5-mini", "gpt-4.1", "gpt-4o", "o4-mini"),
    ),
    # https://api-docs.deepseek.com/guides/thinking_mode : thinking {type: enabled|disabled} is
    # on by default; reasoning_effort low|high|max (minimal/medium/xhigh are mapped by the
    # server); reasoning_content of tool-calling turns must be passed back; deepseek-reasoner
    # always thinks, deepseek-chat is the non-thinking alias. Images are not accepted.
    Profile(
        name="deepseek",
        reasoning_control="deepseek_thinking",
        echo_reasoning_content=True,
        thinking_default=True,
        always_thinking_models=("deepseek-reasoner",),
        non_thinking_default_models=("deepseek-chat",),
        accepts_images=False,
        tool_call_content="",
        default_models=_models(
            "deepseek-v4-pro", "deepseek-v4-flash", "deepseek-chat", "deepseek-reasoner"
        ),
    ),
    # https://docs.x.ai/docs/guides/reasoning : reasoning_effort on grok-3-mini (low|high) and
    # grok-4.3 and later (none|low|medium|high); grok-4 rejects the parameter.
    Profile(
        name="xai",
        reasoning_control="reasoning_effort",
        reasoning_models=("grok-3-mini", "grok-4.3", "grok-4.5"),
        effort_map=_frozen({"minimal": "low", "xhigh": "high", "max": "high"}),
        default_models=_models("grok-4", "grok-3-mini", "grok-code-fast-1"),
    ),
    # https://www.alibabacloud.com/help/en/model-studio/deep-thinking (enable_thinking,
    # thinking_budget) and .../web-search (enable_search), DashScope compatible mode.
    Profile(
        name="qwen",
        reasoning_control="qwen_thinking",
        web_search="enable_search",
        default_models=_models("qwen3-max", "qwen-plus", "qwen-flash"),
    ),
    # https://openrouter.ai/docs/use-cases/reasoning-tokens (reasoning: {effort | max_tokens});
    # https://openrouter.ai/docs/features/web-search (plugins: [{id: "web"}]).
    Profile(
        name="openrouter",
        reasoning_control="openrouter_reasoning",
        web_search="openrouter_plugin",
        default_models=_models(
            "openai/gpt-5", "anthropic/claude-sonnet-4.5", "google/gemini-2.5-pro",
            "deepseek/deepseek-chat",
        ),
    ),
    # https://console.groq.com/docs/api-reference#chat-create : max_completion_tokens
    # (max_tokens deprecated); reasoning_effort low|medium|high on gpt-oss models.
    Profile(
        name="groq",
        max_tokens_field="max_completion_tokens",
        reasoning_control="reasoning_effort",
        reasoning_models=("openai/gpt-oss",),
        effort_map=_frozen({"minimal": "low", "none": "", "xhigh": "high", "max": "high"}),
        default_models=_models(
            "llama-3.3-70b-versatile", "openai/gpt-oss-120b", "openai/gpt-oss-20b"
        ),
    ),
    # https://docs.mistral.ai/api/#tag/chat : strict request schema (no stream_options; usage
    # comes with the last chunk anyway); tool-call ids are 9 letters/digits
    # ("Tool call id has to be of length 9").
    Profile(
        name="mistral",
        stream_usage=False,
        tool_call_id_alnum9=True,
        tool_call_content="",
        default_models=_models(
            "mistral-large-latest", "mistral-medium-latest", "mistral-small-latest",
            "magistral-medium-latest", "codestral-latest",
        ),
    ),
    # https://github.com/ollama/ollama/blob/main/docs/openai.md : stream_options.include_usage
    # and reasoning_effort are supported; models come from the local server.
    Profile(name="ollama", reasoning_control="reasoning_effort"),
    # https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html
    Profile(name="vllm", reasoning_control="reasoning_effort"),
    # https://github.com/ggml-org/llama.cpp/tree/master/tools/server (OpenAI-compatible API)
    Profile(name="llamacpp"),
    # Anything else: plain OpenAI Chat Completions; reasoning_effort is sent only when the
    # model's configuration asked for it.
    Profile(name="generic", reasoning_control="reasoning_effort"),
)})

# host (exact, lower-case) -> profile name. DashScope has regional hosts, matched by pattern.
_HOSTS: Mapping[str, str] = MappingProxyType({
    "api.openai.com": "openai",
    "api.deepseek.com": "deepseek",
    "api.x.ai": "xai",
    "openrouter.ai": "openrouter",
    "api.groq.com": "groq",
    "api.mistral.ai": "mistral",
})
_OLLAMA_PORT = 11434  # Ollama's default port, on this machine or another one of the network


def profile_for(name: str | None, base_url: str) -> Profile:
    """The profile called ``name``, or the one the host of ``base_url`` implies.

    ``name`` None or "" derives it: api.openai.com -> openai, api.deepseek.com -> deepseek,
    api.x.ai -> xai, dashscope*.aliyuncs.com -> qwen, openrouter.ai -> openrouter,
    api.groq.com -> groq, api.mistral.ai -> mistral, port 11434 -> ollama, else generic.
    Raises ValueError for an unknown name.
    """
    if name:
        try:
            return PROFILES[name]
        except KeyError:
            raise ValueError(
                f"unknown OpenAI-compatible profile {name!r}; expected one of {sorted(PROFILES)}"
            ) from None
    return PROFILES[_profile_name_for_url(base_url)]


def _profile_name_for_url(base_url: str) -> str:
    parts = urlsplit(base_url if "//" in base_url else f"//{base_url}")
    host = (parts.hostname or "").lower()
    if host in _HOSTS:
        return _HOSTS[host]
    if host.startswith("dashscope") and host.endswith(".aliyuncs.com"):
        return "qwen"
    try:
        port = parts.port
    except ValueError:
        port = None
    return "ollama" if port == _OLLAMA_PORT else "generic"
