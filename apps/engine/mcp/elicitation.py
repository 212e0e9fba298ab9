"""MCP elicitation: a server asks the people behind the client for input during a request.

The rules are the specification's (``client/elicitation``, protocol 2025-11-25): the server
sends ``elicitation/create`` with a ``message`` and, in form mode, a ``requestedSchema`` — a
restricted JSON Schema: an object of flat properties, each a string (optionally with a
``format`` of email, uri, date or date-time), a number or integer, a boolean, or an enum (single
select: ``enum`` or ``oneOf`` of ``const``/``title``; multiple select: an ``array`` whose
``items`` are such an enum). The client answers ``{"action": "accept" | "decline" |
"cancel", "content"?}``, ``content`` only with ``accept`` and fitting the schema.

The host answers through an :class:`ElicitationPort` (the room asks its members; the
conformance driver of issue 27 plugs in :class:`AcceptDefaults`). :class:`ElicitationRelay`
is what the :class:`~apps.engine.mcp.McpManager` hands the SDK as ``elicitation_callback``:
it checks the schema, names the request, emits ``awaiting_elicitation`` and
``elicitation_answered`` and checks the answer before the server gets it. URL mode (a link to
open elsewhere) is declined: confab shows no third-party links on a server's behalf.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import mcp_types as types
from jsonschema import Draft202012Validator, FormatChecker, SchemaError

from apps.engine.events import AwaitingElicitation, ElicitationAnswered, RuntimeEvent

__all__ = [
    "AcceptDefaults",
    "ElicitationAnswer",
    "ElicitationPort",
    "ElicitationRelay",
    "ElicitationRequest",
    "content_problem",
    "schema_problem",
]

Action = Literal["accept", "decline", "cancel"]
EventSink = Callable[[RuntimeEvent], Awaitable[None] | None]
_PRIMITIVES = ("string", "number", "integer", "boolean")
_FORMATS = ("email", "uri", "date", "date-time")


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """What a server asks: ``elicitation_id`` (minted by confab, unique), ``server`` (its
    configured name), ``message`` (for people) and ``schema`` (the restricted JSON Schema the
    answer's content must fit)."""

    elicitation_id: str
    server: str
    message: str
    schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    """The answer: ``action``; ``content`` (only with ``accept``); ``answered_by`` (a display
    name; None when nobody answered in time, which the host reports as ``decline``)."""

    action: Action
    content: dict[str, Any] | None = None
    answered_by: str | None = None


@runtime_checkable
class ElicitationPort(Protocol):
    """Asks people (or a stand-in) a server's elicitation."""

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        """Wait for the answer. The host bounds the wait (a timeout answers ``decline``) and
        returns ``accept`` only with content that fits ``request.schema``."""
        ...


class AcceptDefaults:
    """An :class:`ElicitationPort` that accepts at once with each property's ``default``
    (properties without one are left out): for drivers that run servers unattended."""

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        properties = request.schema.get("properties") or {}
        content = {name: prop["default"] for name, prop in properties.items()
                   if isinstance(prop, dict) and "default" in prop}
        return ElicitationAnswer(action="accept", content=content, answered_by="defaults")


def schema_problem(schema: object) -> str | None:
    """None when ``schema`` is a restricted elicitation schema (see the module doc), else what
    is wrong, as a sentence."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "the requested schema must be an object schema"
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict):
        return "the requested schema's properties must be an object"
    for name, prop in properties.items():
        if not _restricted(prop):
            return f"property {name!r} is not a string, number, boolean or enum"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"the requested schema is not valid JSON Schema: {exc.message}"
    return None


def _restricted(prop: object) -> bool:
    if not isinstance(prop, dict):
        return False
    kind = prop.get("type")
    if kind == "array":  # a multiple select: items are an enum of strings
        items = prop.get("items")
        return isinstance(items, dict) and ("enum" in items or "anyOf" in items)
    if kind == "string" and prop.get("format") not in (None, *_FORMATS):
        return False
    return kind in _PRIMITIVES


def content_problem(schema: dict[str, Any], content: object) -> str | None:
    """None when ``content`` fits ``schema`` (a restricted schema; formats checked too), else
    the first problems, one line each, naming the field."""
    validator = Draft202012Validator(schema, format_checker=FormatChecker())
    errors = sorted(validator.iter_errors(content), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    return "; ".join(f"{'.'.join(str(p) for p in e.absolute_path) or 'content'}: {e.message}"
                     for e in errors[:5])


class ElicitationRelay:
    """The SDK's ``elicitation_callback`` for the servers of one run, over ``port``.

    ``on_event`` gets ``awaiting_elicitation`` before the port is asked and
    ``elicitation_answered`` after (sync or async).
    A schema outside the restricted subset is answered with the JSON-RPC error
    ``INVALID_PARAMS``; an answer whose content does not fit is sent as ``cancel`` (the port
    broke its contract; the server must not get unchecked content).
    """

    def __init__(self, port: ElicitationPort, on_event: EventSink | None = None) -> None:
        self.port = port
        self._on_event = on_event

    def callback(self, server: str) -> Callable[..., Awaitable[types.ElicitResult
                                                              | types.ErrorData]]:
        """The callback for ``server``'s session (its name goes into each request)."""
        async def elicit(context: Any, params: types.ElicitRequestParams
                         ) -> types.ElicitResult | types.ErrorData:
            return await self.relay(server, params)
        return elicit

    async def relay(self, server: str, params: types.ElicitRequestParams
                    ) -> types.ElicitResult | types.ErrorData:
        """Answer one ``elicitation/create`` of ``server``."""
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="decline")
        problem = schema_problem(params.requested_schema)
        if problem is not None:
            return types.ErrorData(code=types.INVALID_PARAMS, message=problem)
        request = ElicitationRequest(elicitation_id=f"elicit_{uuid.uuid4().hex[:16]}",
                                     server=server, message=params.message,
                                     schema=params.requested_schema)
        await self._emit(AwaitingElicitation(
            elicitation_id=request.elicitation_id, server=server, message=request.message,
            schema=request.schema))
        answer = await self.port.elicit(request)
        if answer.action == "accept" and content_problem(request.schema,
                                                         answer.content or {}) is not None:
            answer = ElicitationAnswer(action="cancel", answered_by=answer.answered_by)
        content = answer.content if answer.action == "accept" else None
        await self._emit(ElicitationAnswered(
            elicitation_id=request.elicitation_id, action=answer.action, content=content,
            answered_by=answer.answered_by))
        return types.ElicitResult(action=answer.action, content=content)

    async def _emit(self, event: RuntimeEvent) -> None:
        if self._on_event is None:
            return
        outcome = self._on_event(event)
        if inspect.isawaitable(outcome):
            await outcome
