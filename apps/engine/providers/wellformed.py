"""A translator's output, held to the event types before anything downstream sees it.

The translators read providers' JSON with ``.get`` and pass values on; a value of the wrong
JSON type (a ``text`` that is an object, a ``model`` that is a number, a usage count that is a
string) used to travel inside an event until the assembler or the store raised a ``TypeError``
or a pydantic ``ValidationError`` — outside the closed ``ProviderError`` tree the runtime
handles (errors.py; DESIGN 2.3: adapters raise ProviderError, never another exception).
:func:`translated` runs one translator step and turns both cases into the same
``ProviderError`` a stream event that is not JSON already gives (kind ``server``,
``in_stream``): the provider broke its own protocol.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import fields
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import ChatStreamEvent

__all__ = ["translated"]

# What a translator raises when a field has an unexpected shape (pydantic's ValidationError
# is a ValueError).
_SHAPE_ERRORS = (TypeError, ValueError, KeyError, IndexError, AttributeError)


def translated(protocol: str, step: Callable[[], list[ChatStreamEvent]]
               ) -> list[ChatStreamEvent]:
    """``step()`` (a translator's ``feed(sse)`` or ``finish()``) with every event checked
    against its dataclass's field types. Raises ProviderError: the translator's own, or kind
    ``server`` (in_stream) when a field had the wrong type or the step raised on one."""
    try:
        events = step()
    except ProviderError:
        raise
    except _SHAPE_ERRORS as exc:
        raise _malformed(protocol, f"{type(exc).__name__}: {exc}") from exc
    for event in events:
        problem = _mistyped_field(event)
        if problem is not None:
            raise _malformed(protocol, problem)
    return events


def _malformed(protocol: str, why: str) -> ProviderError:
    return ProviderError(ErrorKind.SERVER,
                         f"{protocol}: a stream event does not follow the protocol ({why[:300]})",
                         provider=protocol, in_stream=True)


def _mistyped_field(event: ChatStreamEvent) -> str | None:
    """``"<Event>.<field> is <type>"`` for the first field whose value has the wrong type."""
    for name, allowed in _field_types(type(event)):
        value = getattr(event, name)
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            return f"{type(event).__name__}.{name} is {type(value).__name__}"
    return None


@cache
def _field_types(cls: type) -> tuple[tuple[str, tuple[type, ...]], ...]:
    """Per field of the event dataclass ``cls``, the runtime types its annotation allows
    (generics by their origin: ``dict[str, Any]`` -> ``dict``); Literal tags are skipped."""
    hints = get_type_hints(cls)
    checked = []
    for field in fields(cls):
        allowed = _runtime_types(hints[field.name])
        if allowed:
            checked.append((field.name, allowed))
    return tuple(checked)


def _runtime_types(hint: Any) -> tuple[type, ...]:
    parts = get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)
    allowed: list[type] = []
    for part in parts:
        origin = get_origin(part) or part
        if origin is Literal or part is Any:
            return ()
        allowed.append(type(None) if part is None else origin)
        if origin is float:
            allowed.append(int)  # JSON numbers: 3 is a float field's value too
    return tuple(allowed)
