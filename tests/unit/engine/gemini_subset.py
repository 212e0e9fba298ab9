"""An independent check of Gemini's ``Schema`` subset, for tests of the conversion.

Written from Gemini's documentation, not from the converter: the ``Schema`` object
(https://ai.google.dev/api/caching#Schema: "Required. Data type."; ``enum`` for STRING;
``items`` for ARRAY; ``properties``/``required`` for OBJECT; ``format`` per type) and the 400s
Gemini answers for the rest, quoted from public bug reports:

- ``Unknown name "additionalProperties" ...: Cannot find field`` (any keyword outside the proto)
- ``...properties[data].properties: only allowed for OBJECT type`` (same for ``required``)
- ``...enum: only allowed for STRING type``; ``Invalid value at ...enum[0] (TYPE_STRING), 0``
- ``...items: field predicate failed: $type == Type.ARRAY``; ``...items: missing field``
- ``Invalid value at ...type (Type), ""`` and ``Proto field is not repeating, cannot start list``
- ``schema didn't specify the schema type field``
- ``required fields ['module'] are not defined in the schema properties``
- ``properties: should be non-empty for OBJECT type``
"""

from __future__ import annotations

from typing import Any

TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})
FIELDS = frozenset({
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
})
FORMATS = {"string": {"enum", "date-time"}, "number": {"float", "double"},
           "integer": {"int32", "int64"}}
ONLY_FOR = {  # keyword -> the one type it is allowed on
    **dict.fromkeys(("properties", "required", "propertyOrdering", "minProperties",
                     "maxProperties"), "object"),
    **dict.fromkeys(("items", "minItems", "maxItems"), "array"),
    **dict.fromkeys(("enum", "minLength", "maxLength", "pattern"), "string"),
}
COUNTS = ("minItems", "maxItems", "minProperties", "maxProperties", "minLength", "maxLength")


def problems(schema: Any, *, root: bool = True) -> list[str]:
    """Every way ``schema`` (a converted ``parameters`` schema) leaves the subset, with its path;
    empty when Gemini accepts it."""
    found: list[str] = []
    _check(schema, "parameters", found)
    if root and isinstance(schema, dict) and schema.get("type") != "object":
        found.append("parameters: the top level must be an OBJECT")
    return found


def _check(node: Any, path: str, found: list[str]) -> None:
    if not isinstance(node, dict):
        found.append(f"{path}: not a schema object")
        return
    for key in sorted(set(node) - FIELDS):
        found.append(f"{path}: unknown field {key!r}")
    kind = node.get("type")
    if kind is None and "anyOf" not in node:
        found.append(f"{path}: no type")
    elif kind is not None and kind not in TYPES:
        found.append(f"{path}: invalid type {kind!r}")
    for key, only in ONLY_FOR.items():
        if key in node and kind != only:
            found.append(f"{path}.{key}: only allowed for {only.upper()} type")
    _check_values(node, path, found)
    for name, sub in (node.get("properties") or {}).items():
        _check(sub, f"{path}.properties[{name}]", found)
    if "items" in node:
        _check(node["items"], f"{path}.items", found)
    elif kind == "array":
        found.append(f"{path}.items: missing field")
    for index, branch in enumerate(node.get("anyOf") or []):
        _check(branch, f"{path}.anyOf[{index}]", found)


def _check_values(node: dict[str, Any], path: str, found: list[str]) -> None:
    kind = node.get("type")
    if "format" in node and node["format"] not in FORMATS.get(kind, ()):
        found.append(f"{path}.format: {node['format']!r} is not a format of {kind}")
    if "enum" in node and not (isinstance(node["enum"], list) and node["enum"]
                               and all(isinstance(v, str) for v in node["enum"])):
        found.append(f"{path}.enum: not a non-empty list of strings")
    if "properties" in node and not (isinstance(node["properties"], dict)
                                     and node["properties"]):
        found.append(f"{path}.properties: should be non-empty for OBJECT type")
    declared = node.get("properties") or {}
    for key in ("required", "propertyOrdering"):
        names = node.get(key, [])
        if not isinstance(names, list) or any(n not in declared for n in names):
            found.append(f"{path}.{key}: names a property that is not defined")
    if "anyOf" in node and not (isinstance(node["anyOf"], list) and node["anyOf"]):
        found.append(f"{path}.anyOf: not a non-empty list")
    for key in COUNTS:
        value = node.get(key)
        if key in node and not (isinstance(value, int) and not isinstance(value, bool)
                                and value >= 0):
            found.append(f"{path}.{key}: not a count")
    for key in ("minimum", "maximum"):
        if key in node and (isinstance(node[key], bool)
                            or not isinstance(node[key], int | float)):
            found.append(f"{path}.{key}: not a number")
        elif key in node and kind not in ("number", "integer"):
            found.append(f"{path}.{key}: only allowed for NUMBER and INTEGER types")
    for key, kinds in (("description", str), ("pattern", str), ("nullable", bool)):
        if key in node and not isinstance(node[key], kinds):
            found.append(f"{path}.{key}: wrong value type")
