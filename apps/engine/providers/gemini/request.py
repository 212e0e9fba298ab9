"""ChatRequest -> the body of Gemini ``streamGenerateContent`` (DESIGN 2.3).

Reference: https://ai.google.dev/api/generate-content (GenerateContentRequest, Content, Part).

- ``systemInstruction`` holds the system prompt (and any ``role="system"`` message).
- ``contents`` alternate ``user`` and ``model``; consecutive same-role turns are merged, and a
  history that starts with the model gets a leading user "Continue." (a function-call turn must
  follow a user or function-response turn). ``role="tool"`` results are user turns.
- A model turn keeps every part of the assistant message in order: text, ``thought: true``
  parts, ``functionCall`` (``args`` an object), server-tool parts (``toolCall``/``toolResponse``/
  ``executableCode``/``codeExecutionResult``) verbatim; each ``thoughtSignature`` rides on
  exactly the part it came with (https://ai.google.dev/gemini-api/docs/thought-signatures).
- All parallel calls stay in one model content and all their ``functionResponse`` parts go in
  the next user content, in call order; a call without a recorded result gets an error
  response, because Gemini requires one response per call
  (https://ai.google.dev/gemini-api/docs/function-calling).
- ``functionResponse.response`` is an object: ``{"result": text}``, or ``{"error": text}`` for
  a failed call. A call id is sent only when Gemini issued it (ids minted by confab for calls
  Gemini sent without one never reach Gemini).
- Artefacts of other protocols are dropped: Anthropic thinking/signatures, redacted thinking,
  server-tool blocks, ``reasoning_content``. On Gemini 3 a function call that has no signature
  (history from another provider) gets the documented validator-skip signature.
"""

from __future__ import annotations

import re
from typing import Any

from apps.engine.images import ImageLimits, fit
from apps.engine.messages import (
    ChatRequest,
    ImageBlock,
    Message,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from apps.engine.providers.gemini.thinking import is_gemini3, thinking_config
from apps.engine.providers.schema import to_gemini_parameters

__all__ = ["IMAGE_LIMITS", "SERVER_TOOLS", "SKIP_SIGNATURE", "build_body", "contents_of",
           "tools_of"]

IMAGE_LIMITS = ImageLimits(max_edge=3072, max_bytes=2 * 1024 * 1024,
                           media_types=frozenset({"image/png", "image/jpeg", "image/webp"}))
"""https://ai.google.dev/gemini-api/docs/image-understanding: PNG, JPEG, WebP, HEIC and HEIF
(no GIF: its first frame goes as PNG); inline data makes a request of at most 20 MB in all, so
an image gets 2 MB of base64 (8 of them leave room for the rest). Gemini scales and tiles large
images itself; 3072 px is this adapter's own bound on the long edge, to keep the bytes down."""

SERVER_TOOLS = {
    "web_search": "google_search",  # https://ai.google.dev/gemini-api/docs/google-search
    "google_search": "google_search",
    "url_context": "url_context",  # https://ai.google.dev/gemini-api/docs/url-context
    "code_execution": "code_execution",  # https://ai.google.dev/gemini-api/docs/code-execution
}
"""ChatRequest.server_tools names -> Gemini built-in tool fields."""

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""The placeholder signature Google documents for function calls Gemini did not produce
(https://ai.google.dev/gemini-api/docs/thought-signatures, FAQ)."""

CONTINUE_TEXT = "Continue."
MISSING_RESULT = "No result was recorded for this call."
_SERVER_PART_KEYS = ("toolCall", "toolResponse", "executableCode", "codeExecutionResult")
_MINTED_ID = re.compile(r"call_[0-9a-f]{24}")  # apps.engine.providers.base.new_tool_call_id


def build_body(request: ChatRequest) -> dict[str, Any]:
    """The JSON body: ``contents``, and when set ``systemInstruction``, ``generationConfig``,
    ``tools``, ``toolConfig``."""
    body: dict[str, Any] = {"contents": contents_of(request.messages, request.model)}
    system = _system_text(request)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    generation = _generation_config(request)
    if generation:
        body["generationConfig"] = generation
    tools = tools_of(request)
    if tools:
        body["tools"] = tools
        if _combines_builtin_and_functions(tools):
            # Built-in tools beside function declarations need the server-side invocations in
            # the response (https://ai.google.dev/gemini-api/docs/tool-combination).
            body["toolConfig"] = {"includeServerSideToolInvocations": True}
    return body


def _system_text(request: ChatRequest) -> str:
    texts = [request.system or ""]
    texts += [m.text() for m in request.messages if m.role == "system"]
    return "\n\n".join(t for t in texts if t)


def _generation_config(request: ChatRequest) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if request.max_tokens is not None:
        config["maxOutputTokens"] = request.max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    thinking = thinking_config(request.model, request.reasoning, request.max_tokens)
    if thinking:
        config["thinkingConfig"] = thinking
    return config


# -- tools -------------------------------------------------------------------------------------
def tools_of(request: ChatRequest) -> list[dict[str, Any]]:
    """``[{"functionDeclarations": [...]}, {"google_search": {}}, ...]``: client tools with
    converted schemas, then the built-in tools asked for (``server_tools``, and
    ``reasoning.url_context``)."""
    tools: list[dict[str, Any]] = []
    if request.tools:
        tools.append({"functionDeclarations": [tool_param(t) for t in request.tools]})
    wanted = list(request.server_tools)
    if request.reasoning is not None and request.reasoning.url_context:
        wanted.append("url_context")
    seen: set[str] = set()
    for name in wanted:
        field = SERVER_TOOLS.get(name)
        if field and field not in seen:
            seen.add(field)
            tools.append({field: {}})
    return tools


def tool_param(tool: ToolDefinition) -> dict[str, Any]:
    """One ``functionDeclarations`` entry, its schema converted to Gemini's subset."""
    declaration: dict[str, Any] = {"name": tool.name}
    if tool.description:
        declaration["description"] = tool.description
    declaration["parameters"] = to_gemini_parameters(tool.parameters)
    return declaration


def _combines_builtin_and_functions(tools: list[dict[str, Any]]) -> bool:
    has_functions = any("functionDeclarations" in t for t in tools)
    return has_functions and any("functionDeclarations" not in t for t in tools)


# -- contents ----------------------------------------------------------------------------------
def contents_of(messages: list[Message], model: str) -> list[dict[str, Any]]:
    """The ``contents`` array for ``messages`` (system messages excluded), ready to send."""
    history = _History(model)
    for message in messages:
        if message.role == "assistant":
            history.add("model", history.model_parts(message))
        elif message.role in ("user", "tool"):
            history.add("user", history.user_parts(message))
    return history.finish()


class _History:
    """Builds ``contents`` turn by turn. It remembers which tool-use id each functionCall and
    functionResponse part belongs to (by part identity, so nothing extra is sent) to pair
    results with their calls."""

    def __init__(self, model: str) -> None:
        self.gemini3 = is_gemini3(model)
        self.contents: list[dict[str, Any]] = []
        self.sent_ids: dict[str, str | None] = {}  # tool_use_id -> the id sent to Gemini
        self.names: dict[str, str] = {}  # tool_use_id -> tool name
        self.owner: dict[int, str] = {}  # id(part) -> tool_use_id, for calls and responses

    def add(self, role: str, parts: list[dict[str, Any]]) -> None:
        """Append a turn, merging it into the previous one of the same role."""
        if not parts:
            return
        if self.contents and self.contents[-1]["role"] == role:
            self.contents[-1]["parts"].extend(parts)
        else:
            self.contents.append({"role": role, "parts": parts})

    def finish(self) -> list[dict[str, Any]]:
        """Pair each model turn's calls with responses in the next user turn; results with no
        call before them become text; a model turn first gets a user turn before it."""
        contents = self.contents
        i = 0
        while i < len(contents):
            content = contents[i]
            if content["role"] == "model" and _calls(content):
                if i + 1 == len(contents) or contents[i + 1]["role"] != "user":
                    contents.insert(i + 1, {"role": "user", "parts": []})
                self._pair(content, contents[i + 1])
                i += 1  # the paired user turn is done
            elif content["role"] == "user":
                content["parts"] = [_as_text(p) for p in content["parts"]]
            i += 1
        contents = [c for c in contents if c["parts"]]
        if contents and contents[0]["role"] == "model":
            contents.insert(0, {"role": "user", "parts": [{"text": CONTINUE_TEXT}]})
        return contents

    def _pair(self, model: dict[str, Any], user: dict[str, Any]) -> None:
        """One functionResponse per call of ``model``, first in ``user`` and in call order (an
        error response where no result was recorded), then the user turn's other parts."""
        responses = [p for p in user["parts"] if "functionResponse" in p]
        others = [p for p in user["parts"] if "functionResponse" not in p]
        ordered = []
        for part in (p for p in model["parts"] if "functionCall" in p):
            match = self._take(responses, part)
            ordered.append(match if match is not None else _missing_response(part["functionCall"]))
        user["parts"] = [*ordered, *(_as_text(p) for p in responses), *others]

    def _take(self, responses: list[dict[str, Any]], call_part: dict[str, Any]
              ) -> dict[str, Any] | None:
        """Remove and return the response to ``call_part``: same tool-use id, else (a history
        whose ids were rewritten) the first response with the call's name."""
        key = self.owner.get(id(call_part))
        name = call_part["functionCall"]["name"]
        for matches in (lambda p: self.owner.get(id(p)) == key,
                        lambda p: p["functionResponse"]["name"] == name):
            for i, part in enumerate(responses):
                if matches(part):
                    return responses.pop(i)
        return None

    # -- assistant messages ----------------------------------------------------------------
    def model_parts(self, message: Message) -> list[dict[str, Any]]:
        """The parts of one assistant message, artefacts kept only when Gemini made them."""
        own = message.provider == "gemini"
        parts: list[dict[str, Any]] = []
        for block in message.content:
            part = self._model_part(block, own)
            if part is not None:
                parts.append(part)
        if self.gemini3:
            _sign_unsigned_calls(parts)
        return parts

    def _model_part(self, block: Any, own: bool) -> dict[str, Any] | None:
        match block:
            case TextBlock(text=text, thought_signature=signature):
                if not text and not (own and signature):
                    return None
                return _signed({"text": text}, signature if own else None)
            case ThinkingBlock(thinking=text, thought_signature=signature) if own and (
                    text or signature):
                return _signed({"text": text, "thought": True}, signature)
            case ToolUseBlock():
                return self._function_call(block, own)
            case ServerToolBlock(raw=raw) if own and any(k in raw for k in _SERVER_PART_KEYS):
                return dict(raw)
            case ImageBlock():
                return _inline(block)
            case _:  # other protocols' thinking, redacted thinking and server tools
                return None

    def _function_call(self, block: ToolUseBlock, own: bool) -> dict[str, Any]:
        call: dict[str, Any] = {"name": block.name, "args": dict(block.input)}
        sent_id = block.id if own and not _MINTED_ID.fullmatch(block.id) else None
        if sent_id is not None:
            call["id"] = sent_id
        self.sent_ids[block.id] = sent_id
        self.names[block.id] = block.name
        part = _signed({"functionCall": call}, block.thought_signature if own else None)
        self.owner[id(part)] = block.id
        return part

    # -- user and tool messages ------------------------------------------------------------
    def user_parts(self, message: Message) -> list[dict[str, Any]]:
        """Text, images and function responses of a user or tool message."""
        parts: list[dict[str, Any]] = []
        for block in message.content:
            match block:
                case TextBlock(text=text) if text:
                    parts.append({"text": text})
                case ImageBlock():
                    parts.append(_inline(block))
                case ToolResultBlock():
                    parts.extend(self._function_response(block))
                case _:
                    pass  # reasoning artefacts never belong to a user turn
        return parts

    def _function_response(self, block: ToolResultBlock) -> list[dict[str, Any]]:
        """The functionResponse part, then the result's images as inline data."""
        key = "error" if block.is_error else "result"
        response: dict[str, Any] = {
            # Gemini matches a response to its call by name: use the name the call was sent with
            "name": self.names.get(block.tool_use_id) or block.name,
            "response": {key: block.text()},
        }
        if (sent_id := self.sent_ids.get(block.tool_use_id)) is not None:
            response["id"] = sent_id
        part = {"functionResponse": response}
        self.owner[id(part)] = block.tool_use_id
        images = block.content if isinstance(block.content, list) else []
        return [part, *(_inline(i) for i in images if isinstance(i, ImageBlock))]


def _inline(block: ImageBlock) -> dict[str, Any]:
    """An image as an ``inlineData`` part, within :data:`IMAGE_LIMITS`."""
    block = fit(block, IMAGE_LIMITS)
    return {"inlineData": {"mimeType": block.media_type, "data": block.data}}


def _signed(part: dict[str, Any], signature: str | None) -> dict[str, Any]:
    if signature:
        part["thoughtSignature"] = signature
    return part


def _sign_unsigned_calls(parts: list[dict[str, Any]]) -> None:
    """Gemini 3 validates the signature of the first function call of each step; a call from
    another provider has none, so it carries the documented skip value instead."""
    calls = [p for p in parts if "functionCall" in p]
    if calls and "thoughtSignature" not in calls[0]:
        calls[0]["thoughtSignature"] = SKIP_SIGNATURE


def _calls(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["functionCall"] for p in content["parts"] if "functionCall" in p]


def _missing_response(call: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {"name": call["name"], "response": {"error": MISSING_RESULT}}
    if "id" in call:
        response["id"] = call["id"]
    return {"functionResponse": response}


def _as_text(part: dict[str, Any]) -> dict[str, Any]:
    """A functionResponse with no call before it cannot be sent as one (Gemini rejects it);
    its content goes as text, other parts unchanged."""
    if "functionResponse" not in part:
        return part
    response = part["functionResponse"]
    value = next(iter(response["response"].values()), "")
    return {"text": f"[result of {response['name'] or 'a tool call'}]\n{value}"}
