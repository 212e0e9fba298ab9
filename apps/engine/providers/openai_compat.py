"""The OpenAI-compatible Chat Completions adapter (OpenAI, DeepSeek, xAI, Qwen, OpenRouter, Groq,
Mistral, Ollama, vLLM, llama.cpp, ...).

Three seams (DESIGN 2.3): :func:`build_body` maps a ChatRequest to the request body, shaped by
the server's :class:`~apps.engine.providers.profiles.Profile`; :class:`OpenAITranslator`
(``openai_stream``) turns the SSE stream into ChatStreamEvents; errors go through the shared
classifier. The base URL includes the version, as the OpenAI SDK's does
(``https://api.openai.com/v1``); the adapter adds ``/chat/completions`` and ``/models``.

Request rules (https://platform.openai.com/docs/api-reference/chat/create):

- ``stream: true``, and ``stream_options: {include_usage: true}`` where the profile accepts it,
  so the last chunk carries usage.
- Tools in function form; tool results as one ``tool`` message per result with its
  ``tool_call_id``; assistant tool calls with ``arguments`` as a JSON string (``"{}"``, never
  ``""``, case 024). Every call is answered and no result is orphaned, as the API requires.
- Reasoning artefacts: ``reasoning_content`` goes back only to profiles that want it, and then on
  every assistant message while thinking is on (DeepSeek, case 030); Anthropic thinking,
  redacted thinking, server-tool blocks and Gemini signatures are dropped (REASONING-ROUNDTRIP).
- Images as ``image_url`` data URLs, within :data:`IMAGE_LIMITS`.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from typing import Any, ClassVar

import httpx2

from apps.engine.images import ImageLimits, fit
from apps.engine.messages import (
    ChatRequest,
    ImageBlock,
    Message,
    ReasoningParams,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from apps.engine.providers.base import HttpCall, HttpProvider, ModelInfo, ProviderSettings
from apps.engine.providers.openai_stream import OpenAITranslator
from apps.engine.providers.profiles import Profile, profile_for

__all__ = [
    "IMAGE_LIMITS",
    "OpenAICompatProvider",
    "OpenAITranslator",
    "asked_thinking",
    "build_body",
    "parse_models",
    "reasoning_fields",
    "wire_messages",
]

_NO_RESULT = "(no result: the tool call did not complete)"
_IMAGE_OMITTED = "[image omitted: this model does not accept images]"
IMAGE_LIMITS = ImageLimits(max_edge=2048, max_bytes=5 * 1024 * 1024,
                           media_types=frozenset({"image/png", "image/jpeg", "image/webp",
                                                  "image/gif"}), animated_gif=False)
"""https://platform.openai.com/docs/guides/images-vision: PNG, JPEG, WebP and non-animated GIF;
at most 50 MB a request; high detail fits an image into 2048 x 2048 first, so nothing larger is
sent. 5 MB an image keeps a message of 8 images under the request's limit."""


class OpenAICompatProvider(HttpProvider):
    """An OpenAI-compatible server; ``settings.profile`` (or the base URL's host) picks the
    quirk profile. ``DEFAULT_MODELS`` is the profile's built-in list."""

    protocol: ClassVar[str] = "openai"

    def __init__(
        self, settings: ProviderSettings, *, transport: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        super().__init__(settings, transport=transport)
        self.profile: Profile = profile_for(settings.profile, settings.base_url)

    @property
    def DEFAULT_MODELS(self) -> tuple[ModelInfo, ...]:  # type: ignore[override]
        return self.profile.default_models

    def build_call(self, request: ChatRequest) -> HttpCall:
        """``POST {base}/chat/completions`` with the profile-shaped body."""
        return HttpCall(
            url=self._url("chat/completions"),
            headers={**self._headers(), "Accept": "text/event-stream"},
            body=build_body(request, self.profile),
        )

    def new_translator(self) -> OpenAITranslator:
        return OpenAITranslator()

    async def fetch_models(self) -> list[ModelInfo]:
        """``GET {base}/models``; raises ProviderError."""
        return parse_models(await self.get_json(self._url("models"), self._headers()))

    def _url(self, path: str) -> str:
        return f"{self.settings.base_url.rstrip('/')}/{path}"

    def _headers(self) -> dict[str, str]:
        headers = dict(self.settings.headers)
        if self.settings.api_key:  # local servers (Ollama, llama.cpp) often have none
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        return headers


# -- the body ---------------------------------------------------------------------------------
def build_body(request: ChatRequest, profile: Profile) -> dict[str, Any]:
    """The Chat Completions request body for ``request`` as ``profile`` wants it."""
    params = request.reasoning or ReasoningParams()
    thinking = profile.thinks(request.model, asked_thinking(params))
    body: dict[str, Any] = {
        "model": request.model,
        "messages": wire_messages(request, profile,
                                  echo_reasoning=profile.echo_reasoning_content and thinking),
        "stream": True,
    }
    if profile.stream_usage:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = [tool_param(t) for t in request.tools]
    if request.max_tokens is not None:
        body[profile.max_tokens_field] = request.max_tokens
    if request.temperature is not None and not (
        profile.reasoning_models_reject_temperature and profile.is_reasoning_model(request.model)
    ):
        body["temperature"] = request.temperature
    body.update(reasoning_fields(params, request.model, profile))
    body.update(_web_search_fields(request, profile))
    return body


def tool_param(tool: ToolDefinition) -> dict[str, Any]:
    """A tool in the Chat Completions ``tools`` form: ``{"type": "function", "function": ...}``."""
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = tool.parameters
    return {"type": "function", "function": function}


def _web_search_fields(request: ChatRequest, profile: Profile) -> dict[str, Any]:
    asked = request.reasoning.enabled_search if request.reasoning else None
    wanted = asked if asked is not None else ("web_search" in request.server_tools or None)
    if wanted is None:
        return {}
    if profile.web_search == "enable_search":
        # https://www.alibabacloud.com/help/en/model-studio/web-search
        return {"enable_search": bool(wanted)}
    if profile.web_search == "openrouter_plugin" and wanted:
        # https://openrouter.ai/docs/features/web-search
        return {"plugins": [{"id": "web"}]}
    return {}


# -- reasoning parameters ---------------------------------------------------------------------
def asked_thinking(params: ReasoningParams) -> bool | None:
    """The caller's explicit thinking switch: off for ``thinking_type="disabled"`` or effort
    "none", on for enabled/adaptive or any other effort, None when unspecified."""
    if params.thinking_type == "disabled" or params.effort == "none":
        return False
    if params.thinking_type in ("enabled", "adaptive") or params.effort is not None:
        return True
    return None


def reasoning_fields(params: ReasoningParams, model: str, profile: Profile) -> dict[str, Any]:
    """The reasoning part of the body for ``model`` on ``profile`` (fields it does not
    understand are ignored, DESIGN 2.1)."""
    fields: dict[str, Any] = {}
    if params.text_verbosity and profile.takes_verbosity(model):
        fields["verbosity"] = params.text_verbosity  # GPT-5 text verbosity
    if not profile.is_reasoning_model(model):
        return fields
    match profile.reasoning_control:
        case "reasoning_effort":
            if effort := _effort(params, profile):
                fields["reasoning_effort"] = effort
        case "deepseek_thinking":
            fields.update(_deepseek_fields(params, model, profile))
        case "qwen_thinking":
            fields.update(_qwen_fields(params))
        case "openrouter_reasoning":
            fields.update(_openrouter_fields(params, profile))
    return fields


def _effort(params: ReasoningParams, profile: Profile) -> str | None:
    if params.effort is None:
        return None
    return profile.effort_map.get(params.effort, params.effort) or None


def _deepseek_fields(params: ReasoningParams, model: str, profile: Profile) -> dict[str, Any]:
    """https://api-docs.deepseek.com/guides/thinking_mode. ``thinking: disabled`` is never sent
    with ``reasoning_effort`` (the API rejects the pair, case 031); a model that always thinks
    (deepseek-reasoner) gets no switch, only the effort."""
    always = profile.thinks(model, False)
    asked = asked_thinking(params)
    if asked is False:
        return {} if always else {"thinking": {"type": "disabled"}}
    fields: dict[str, Any] = {}
    if asked and not always:
        fields["thinking"] = {"type": "enabled"}
    if effort := _effort(params, profile):
        fields["reasoning_effort"] = effort
    return fields


def _qwen_fields(params: ReasoningParams) -> dict[str, Any]:
    """https://www.alibabacloud.com/help/en/model-studio/deep-thinking: ``enable_thinking`` and
    ``thinking_budget`` (tokens, only meaningful while thinking)."""
    asked = asked_thinking(params)
    fields: dict[str, Any] = {}
    if asked is not None:
        fields["enable_thinking"] = asked
    if asked is not False and params.thinking_budget is not None:
        fields["thinking_budget"] = params.thinking_budget
    return fields


def _openrouter_fields(params: ReasoningParams, profile: Profile) -> dict[str, Any]:
    """https://openrouter.ai/docs/use-cases/reasoning-tokens: one of ``effort`` or
    ``max_tokens``; effort "none" turns reasoning off."""
    if asked_thinking(params) is False:
        return {"reasoning": {"effort": "none"}}
    if effort := _effort(params, profile):
        return {"reasoning": {"effort": effort}}
    if params.thinking_budget is not None:
        return {"reasoning": {"max_tokens": params.thinking_budget}}
    if params.thinking_type in ("enabled", "adaptive"):
        return {"reasoning": {"enabled": True}}
    return {}


# -- history ----------------------------------------------------------------------------------
def wire_messages(
    request: ChatRequest, profile: Profile, *, echo_reasoning: bool = False
) -> list[dict[str, Any]]:
    """``request.system`` and ``request.messages`` as Chat Completions messages.

    ``echo_reasoning``: every assistant message carries ``reasoning_content`` ("" when it has
    none, or when it came from another protocol).
    """
    wire: list[dict[str, Any]] = []
    if request.system:
        wire.append({"role": profile.system_role, "content": request.system})
    for message in request.messages:
        wire += _message(message, profile, echo_reasoning)
    return _answer_every_call(wire)


def _message(message: Message, profile: Profile, echo: bool) -> list[dict[str, Any]]:
    match message.role:
        case "system":
            text = _joined_text(message)
            return [{"role": profile.system_role, "content": text}] if text else []
        case "assistant":
            return _assistant(message, profile, echo)
        case _:  # user and tool: results first (they answer the previous turn), then content
            results = [b for b in message.content if isinstance(b, ToolResultBlock)]
            wire = [_tool_result(r, profile) for r in results]
            if message.role == "user" and (content := _user_content(message, profile)):
                wire.append({"role": "user", "content": content})
            return wire


def _assistant(message: Message, profile: Profile, echo: bool) -> list[dict[str, Any]]:
    calls = message.tool_calls()
    text = message.text()
    if not text and not calls:
        return []  # e.g. a run stopped during reasoning: nothing a server would accept
    wire: dict[str, Any] = {"role": "assistant",
                            "content": text or (profile.tool_call_content if calls else "")}
    if calls:
        wire["tool_calls"] = [_tool_call(c, profile) for c in calls]
    if echo:
        # Only reasoning this protocol produced; another provider's thinking is dropped.
        own = message.reasoning_content if message.provider == "openai" else None
        wire["reasoning_content"] = own or ""
    return [wire]


def _tool_call(block: ToolUseBlock, profile: Profile) -> dict[str, Any]:
    return {
        "id": _call_id(block.id, profile),
        "type": "function",
        "function": {"name": block.name,
                     "arguments": json.dumps(block.input, ensure_ascii=False)},
    }


def _tool_result(block: ToolResultBlock, profile: Profile) -> dict[str, Any]:
    if isinstance(block.content, str):
        text = block.content
    else:  # tool messages are text only: images are named, not sent
        text = "".join(b.text if isinstance(b, TextBlock) else _IMAGE_OMITTED
                       for b in block.content)
    return {"role": "tool", "tool_call_id": _call_id(block.tool_use_id, profile), "content": text}


def _user_content(message: Message, profile: Profile) -> str | list[dict[str, Any]]:
    blocks = [b for b in message.content if isinstance(b, (TextBlock, ImageBlock))]
    if not profile.accepts_images or not any(isinstance(b, ImageBlock) for b in blocks):
        # A plain string is what every compatible server accepts.
        return "\n\n".join(b.text if isinstance(b, TextBlock) else _IMAGE_OMITTED
                           for b in blocks)
    return [
        {"type": "text", "text": b.text} if isinstance(b, TextBlock)
        else _image_url(fit(b, IMAGE_LIMITS))
        for b in blocks
    ]


def _image_url(block: ImageBlock) -> dict[str, Any]:
    return {"type": "image_url",
            "image_url": {"url": f"data:{block.media_type};base64,{block.data}"}}


def _joined_text(message: Message) -> str:
    return "\n\n".join(b.text for b in message.content if isinstance(b, TextBlock))


def _answer_every_call(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each assistant ``tool_calls`` message is followed by one ``tool`` message per call, and
    no ``tool`` message answers nothing: the API rejects either (a run stopped mid-tool leaves
    calls without results)."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for item in wire:
        if item["role"] == "tool":
            if item["tool_call_id"] in pending:
                pending.remove(item["tool_call_id"])
                out.append(item)
            continue  # an orphan result: its call is not in the history
        out += [_placeholder_result(call_id) for call_id in pending]
        out.append(item)
        pending = [c["id"] for c in item.get("tool_calls", ())]
    out += [_placeholder_result(call_id) for call_id in pending]
    return out


def _placeholder_result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": _NO_RESULT}


_ALNUM9 = re.compile(r"[A-Za-z0-9]{9}")
_BASE62 = string.ascii_letters + string.digits


def _call_id(call_id: str, profile: Profile) -> str:
    """The id as the server accepts it. Mistral wants 9 letters/digits: other ids are mapped by
    hash, so a call and its result still match."""
    if not profile.tool_call_id_alnum9 or _ALNUM9.fullmatch(call_id):
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode()).digest()[:8], "big")
    digits = []
    for _ in range(9):
        number, rest = divmod(number, 62)
        digits.append(_BASE62[rest])
    return "".join(digits)


# -- models -----------------------------------------------------------------------------------
_NOT_CHAT = ("embed", "tts", "whisper", "dall-e", "moderation", "transcribe", "gpt-image")


def parse_models(payload: Any) -> list[ModelInfo]:
    """Models from ``GET /models``: ``{"data": [{"id", ...}]}`` (or a bare list), keeping chat
    models; ``context_length`` (OpenRouter), ``max_context_length`` (Mistral) or
    ``context_window`` (Groq) and the output cap when the server gives them."""
    items = payload.get("data") if isinstance(payload, dict) else payload
    models: list[ModelInfo] = []
    for item in items if isinstance(items, list) else ():
        model_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(model_id, str) or any(k in model_id.lower() for k in _NOT_CHAT):
            continue
        top = item.get("top_provider") if isinstance(item.get("top_provider"), dict) else {}
        models.append(ModelInfo(
            id=model_id,
            display_name=item.get("name") if isinstance(item.get("name"), str) else None,
            context_window=_first_int(item.get("context_length"),
                                      item.get("max_context_length"),
                                      item.get("context_window")),
            max_output_tokens=_first_int(top.get("max_completion_tokens"),
                                         item.get("max_completion_tokens")),
        ))
    return models


def _first_int(*values: Any) -> int | None:
    return next((v for v in values if isinstance(v, int) and not isinstance(v, bool)), None)
