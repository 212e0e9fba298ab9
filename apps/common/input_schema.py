"""The base of every REST request schema (DESIGN 3.5): a body or query object whose strings,
at any depth, refuse NUL (:func:`apps.common.storable.storable_text`), as the socket's frames
do, so no field can forget it. A parameter declared on its own (``q: StorableText = Query()``)
takes :data:`apps.common.storable.StorableText`; tests/integration/api/test_nul.py sends NUL
to every string of every operation."""

from __future__ import annotations

from ninja import Schema
from pydantic import field_validator

from apps.common.storable import storable_text

__all__ = ["InputSchema"]


class InputSchema(Schema):
    """A request body or query schema; a NUL in any of its strings is ``invalid``."""

    _storable = field_validator("*")(storable_text)
