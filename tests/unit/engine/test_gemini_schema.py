"""JSON Schema -> Gemini Schema conversion, one rule per row (SCHEMA-SANITIZE), plus the
invariants every converted schema keeps, checked over real-world shapes."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from apps.engine.providers.schema import (
    ANY_VALUE,
    GEMINI_KEYWORDS,
    export_parameters,
    to_gemini_parameters,
    to_gemini_schema,
)

S = {"type": "string"}

TABLE: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("plain object unchanged",
     {"type": "object", "properties": {"a": S}, "required": ["a"]},
     {"type": "object", "properties": {"a": S}, "required": ["a"]}),
    ("additionalProperties dropped at the root",
     {"type": "object", "properties": {"a": S}, "additionalProperties": False},
     {"type": "object", "properties": {"a": S}}),
    ("additionalProperties schema dropped in items",
     {"type": "array", "items": {"type": "object", "properties": {"a": S},
                                 "additionalProperties": {"type": "string"}}},
     {"type": "array", "items": {"type": "object", "properties": {"a": S}}}),
    ("meta keywords dropped",
     {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "title": "T",
      "$comment": "c", "examples": [1], "default": 1, "type": "integer", "multipleOf": 2,
      "exclusiveMinimum": 0, "deprecated": True, "readOnly": True},
     {"type": "integer"}),
    ("object keywords JSON Schema has and Gemini does not",
     {"type": "object", "properties": {"a": S}, "patternProperties": {"^x": S},
      "propertyNames": {"pattern": "^[a-z]+$"}, "dependentRequired": {"a": ["b"]},
      "unevaluatedProperties": False, "minProperties": 1},
     {"type": "object", "properties": {"a": S}, "minProperties": 1}),
    ("array keywords Gemini lacks dropped, bounds kept",
     {"type": "array", "items": S, "uniqueItems": True, "contains": S, "minItems": 1,
      "maxItems": 3},
     {"type": "array", "items": S, "minItems": 1, "maxItems": 3}),
    ("string bounds and pattern kept",
     {"type": "string", "minLength": 1, "maxLength": 9, "pattern": "^a"},
     {"type": "string", "minLength": 1, "maxLength": 9, "pattern": "^a"}),
    ("numeric bounds kept",
     {"type": "number", "minimum": 0, "maximum": 1.5},
     {"type": "number", "minimum": 0, "maximum": 1.5}),
    ("type list with null becomes nullable",
     {"type": ["integer", "null"], "description": "d"},
     {"type": "integer", "description": "d", "nullable": True}),
    ("null first in the type list",
     {"type": ["null", "array"], "items": S},
     {"type": "array", "nullable": True, "items": S}),
    ("anyOf with a null branch becomes nullable (pydantic Optional)",
     {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Nick"},
     {"type": "string", "nullable": True}),
    ("oneOf with a null branch and a ref",
     {"$defs": {"P": {"type": "object", "properties": {"x": S}}},
      "type": "object", "properties": {"p": {"oneOf": [{"$ref": "#/$defs/P"}, {"type": "null"}],
                                             "description": "maybe"}}},
     {"type": "object", "properties": {"p": {"type": "object", "description": "maybe",
                                             "nullable": True, "properties": {"x": S}}}}),
    ("multi-type list becomes anyOf with each type's keywords",
     {"type": ["string", "array"], "items": S, "minLength": 2, "description": "one or many"},
     {"description": "one or many",
      "anyOf": [{"type": "string", "minLength": 2}, {"type": "array", "items": S}]}),
    ("multi-type list with null",
     {"type": ["string", "number", "null"]},
     {"nullable": True, "anyOf": [S, {"type": "number"}]}),
    ("oneOf of objects becomes anyOf",
     {"oneOf": [{"type": "object", "properties": {"a": S}, "required": ["a"]},
                {"type": "object", "properties": {"b": S}, "required": ["b"]}]},
     {"anyOf": [{"type": "object", "properties": {"a": S}, "required": ["a"]},
                {"type": "object", "properties": {"b": S}, "required": ["b"]}]}),
    ("required-only alternatives beside properties do not erase the shape",
     {"type": "object", "properties": {"a": S, "b": S},
      "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
     {"type": "object", "properties": {"a": S, "b": S}}),
    ("identical branches after conversion merge",
     {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "string", "format": "email"}]},
     {"type": "string"}),
    ("const becomes a one-value string enum",
     {"const": "strict"},
     {"type": "string", "enum": ["strict"]}),
    ("anyOf of string consts collapses to one enum",
     {"description": "op", "oneOf": [{"const": "a"}, {"const": "b", "description": "B"},
                                     {"type": "string", "enum": ["c", "a"]}]},
     {"type": "string", "description": "op", "enum": ["a", "b", "c"]}),
    ("enum with null becomes nullable",
     {"enum": ["x", "y", None]},
     {"type": "string", "nullable": True, "enum": ["x", "y"]}),
    ("integer enum is stated in the description, the type stays",
     {"type": "integer", "enum": [1, 2, 3], "description": "Level."},
     {"type": "integer", "description": "Level. Allowed values: 1, 2, 3."}),
    ("numeric const without a type gets the type of its value",
     {"const": 2},
     {"type": "integer", "description": "Allowed values: 2."}),
    ("boolean const",
     {"const": True},
     {"type": "boolean", "description": "Allowed values: true."}),
    ("supported formats kept",
     {"type": "object", "properties": {
         "when": {"type": "string", "format": "date-time"},
         "n": {"type": "integer", "format": "int64"},
         "x": {"type": "number", "format": "double"}}},
     {"type": "object", "properties": {
         "when": {"type": "string", "format": "date-time"},
         "n": {"type": "integer", "format": "int64"},
         "x": {"type": "number", "format": "double"}}}),
    ("unsupported formats dropped, also formats on the wrong type",
     {"type": "object", "properties": {
         "u": {"type": "string", "format": "uri"}, "e": {"type": "string", "format": "email"},
         "d": {"type": "string", "format": "date"}, "i": {"type": "integer", "format": "double"},
         "f": {"type": "number", "format": "int32"}}},
     {"type": "object", "properties": {"u": S, "e": S, "d": S, "i": {"type": "integer"},
                                       "f": {"type": "number"}}}),
    ("required keeps only declared properties",
     {"type": "object", "properties": {"a": S}, "required": ["a", "ghost"]},
     {"type": "object", "properties": {"a": S}, "required": ["a"]}),
    ("empty properties and empty required are left out",
     {"type": "object", "properties": {}, "required": []},
     {"type": "object"}),
    ("propertyOrdering kept for declared properties",
     {"type": "object", "properties": {"a": S, "b": S}, "propertyOrdering": ["b", "a", "z"]},
     {"type": "object", "properties": {"a": S, "b": S}, "propertyOrdering": ["b", "a"]}),
    ("properties without type infer object",
     {"properties": {"a": S}},
     {"type": "object", "properties": {"a": S}}),
    ("$ref to $defs inlined, siblings win",
     {"$defs": {"A": {"type": "string", "description": "inner"}},
      "type": "object", "properties": {"a": {"$ref": "#/$defs/A", "description": "outer"}}},
     {"type": "object", "properties": {"a": {"type": "string", "description": "outer"}}}),
    ("draft-07 definitions and a ref to a ref",
     {"definitions": {"A": {"$ref": "#/definitions/B"}, "B": {"type": "boolean"}},
      "type": "object", "properties": {"a": {"$ref": "#/definitions/A"}}},
     {"type": "object", "properties": {"a": {"type": "boolean"}}}),
    ("the root itself a ref (pydantic model_json_schema of a wrapper)",
     {"$ref": "#/$defs/M", "$defs": {"M": {"type": "object", "properties": {"a": S}}}},
     {"type": "object", "properties": {"a": S}}),
    ("allOf with one ref (older pydantic) merges",
     {"$defs": {"E": {"type": "string", "enum": ["r", "g"]}},
      "type": "object", "properties": {"c": {"allOf": [{"$ref": "#/$defs/E"}],
                                             "description": "colour"}}},
     {"type": "object", "properties": {"c": {"type": "string", "description": "colour",
                                             "enum": ["r", "g"]}}}),
    ("allOf of objects unions properties and required",
     {"allOf": [{"type": "object", "properties": {"a": S}, "required": ["a"]},
                {"properties": {"b": S}, "required": ["b"]}]},
     {"type": "object", "properties": {"a": S, "b": S}, "required": ["a", "b"]}),
    ("recursive ref ends in a permissive object",
     {"$defs": {"Node": {"type": "object", "properties": {
         "value": S, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
      "$ref": "#/$defs/Node"},
     {"type": "object", "properties": {
         "value": S, "children": {"type": "array", "items": {"type": "object"}}}}),
    ("ref to the root recurses once then stops",
     {"type": "object", "properties": {"next": {"$ref": "#", "description": "the next"}}},
     {"type": "object", "properties": {"next": {
         "type": "object", "description": "the next",
         "properties": {"next": {"type": "object", "description": "the next"}}}}}),
    ("mutual recursion terminates",
     {"$defs": {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}},
      "type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
     {"type": "object", "properties": {"a": {"type": "object", "properties": {
         "b": {"type": "object", "properties": {"a": {"type": "object"}}}}}}}),
    ("unresolvable and remote refs become permissive objects",
     {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"},
                                       "b": {"$ref": "https://example.com/s.json"}}},
     {"type": "object", "properties": {"a": {"type": "object"}, "b": {"type": "object"}}}),
    ("json pointer escapes in refs",
     {"$defs": {"a/b": {"type": "number"}, "c~d": {"type": "boolean"}},
      "type": "object", "properties": {"x": {"$ref": "#/$defs/a~1b"},
                                       "y": {"$ref": "#/$defs/c~0d"}}},
     {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "boolean"}}}),
    ("tuple items become one anyOf items schema",
     {"type": "array", "prefixItems": [{"type": "number"}, S], "items": False},
     {"type": "array", "items": {"anyOf": [{"type": "number"}, S]}}),
    ("a boolean subschema admits any value",
     {"type": "object", "properties": {"anything": True}},
     {"type": "object", "properties": {"anything": ANY_VALUE}}),
    ("a property whose schema is false may not be sent: it is left out",
     {"type": "object", "properties": {"a": S, "never": False}, "required": ["a", "never"]},
     {"type": "object", "properties": {"a": S}, "required": ["a"]}),
    ("OpenAPI nullable passes through",
     {"type": "string", "nullable": True},
     {"type": "string", "nullable": True}),
    ("unknown type names dropped: the node admits any value",
     {"type": "any", "description": "whatever"},
     {"description": "whatever", **ANY_VALUE}),
    # Rule 7: every keyword on its own type, every node typed, every array with items.
    ("an array without items gets items that admit any value",
     {"type": "array", "minItems": 1},
     {"type": "array", "items": ANY_VALUE, "minItems": 1}),
    ("items on a string are dropped, the type stays",
     {"type": "string", "items": S, "description": "one, or a range of two"},
     {"type": "string", "description": "one, or a range of two"}),
    ("object keywords on a string are dropped",
     {"type": "string", "properties": {"a": S}, "required": ["a"], "maxProperties": 2},
     {"type": "string"}),
    ("array and number keywords on a string are dropped",
     {"type": "string", "minItems": 1, "maximum": 3, "maxLength": 8},
     {"type": "string", "maxLength": 8}),
    ("string keywords on an integer are dropped",
     {"type": "integer", "pattern": "^[0-9]+$", "minLength": 1, "minimum": 0},
     {"type": "integer", "minimum": 0}),
    ("items imply an array",
     {"items": S},
     {"type": "array", "items": S}),
    ("a pattern implies a string, a minimum a number",
     {"type": "object", "properties": {"p": {"pattern": "^a"}, "n": {"minimum": 1}}},
     {"type": "object", "properties": {"p": {"type": "string", "pattern": "^a"},
                                       "n": {"type": "number", "minimum": 1}}}),
    ("counts that are not non-negative integers are dropped",
     {"type": "string", "minLength": -1, "maxLength": 2.5, "pattern": 7},
     {"type": "string"}),
    ("bounds that are not numbers are dropped",
     {"type": "number", "minimum": "0", "maximum": True},
     {"type": "number"}),
    ("a description alone admits any value",
     {"type": "object", "properties": {"v": {"description": "Value to set"}}},
     {"type": "object", "properties": {"v": {"description": "Value to set", **ANY_VALUE}}}),
    ("type null alone is a nullable value of any type",
     {"type": "null"},
     {"nullable": True, **ANY_VALUE}),
    ("an untyped branch of a union admits any value",
     {"anyOf": [{"type": "integer"}, {"description": "anything else"}]},
     {"anyOf": [{"type": "integer"}, {"description": "anything else", **ANY_VALUE}]}),
    ("an array branch of a union gets items",
     {"oneOf": [{"type": "array"}, {"type": "string"}]},
     {"anyOf": [{"type": "array", "items": ANY_VALUE}, S]}),
    ("a merged branch brings no keyword of another type",
     {"type": "object", "properties": {"a": S}, "anyOf": [{"type": "string", "enum": ["x"]}]},
     {"type": "object", "properties": {"a": S}}),
]


@pytest.mark.parametrize(("source", "expected"), [(s, e) for _, s, e in TABLE],
                         ids=[name for name, _, _ in TABLE])
def test_conversion_rule(source: dict[str, Any], expected: dict[str, Any]) -> None:
    assert to_gemini_schema(source) == expected


def test_the_input_schema_is_not_modified() -> None:
    source = TABLE[12][1]
    before = copy.deepcopy(source)
    to_gemini_schema(source)
    assert source == before


# Schemas as real tools send them: FastMCP/pydantic, Zod (zod-to-json-schema), the MCP
# filesystem server, and a deliberately nasty mix.
REAL_WORLD = [
    {"$defs": {"Op": {"enum": ["insert_text", "delete_text"], "title": "Op", "type": "string"},
               "Req": {"properties": {"op": {"$ref": "#/$defs/Op"},
                                      "text": {"anyOf": [{"type": "string"}, {"type": "null"}],
                                               "default": None, "title": "Text"}},
                       "required": ["op"], "title": "Req", "type": "object"}},
     "properties": {"requests": {"items": {"$ref": "#/$defs/Req"}, "title": "Requests",
                                 "type": "array"}},
     "required": ["requests"], "title": "batch_updateArguments", "type": "object"},
    {"type": "object", "properties": {"path": {"type": "string"}, "edits": {"type": "array",
     "items": {"type": "object", "properties": {"oldText": {"type": "string"},
                                                "newText": {"type": "string"}},
               "required": ["oldText", "newText"], "additionalProperties": False}},
     "dryRun": {"type": "boolean", "default": False}}, "required": ["path", "edits"],
     "additionalProperties": False, "$schema": "http://json-schema.org/draft-07/schema#"},
    {"type": "object", "properties": {
        "when": {"type": ["string", "null"], "format": "date"},
        "tags": {"type": "array", "items": {"anyOf": [{"const": "a"}, {"const": 1}]},
                 "uniqueItems": True},
        "meta": {"type": "object", "additionalProperties": {"type": ["number", "string"]}},
        "choice": {"oneOf": [{"type": "object", "properties": {"kind": {"const": "x"}}},
                             {"type": "object", "properties": {"kind": {"const": "y"}},
                              "not": {"required": ["z"]}}]},
        "cond": {"if": {"properties": {"a": {"const": 1}}}, "then": {"required": ["b"]}}}},
]


def _walk(node: Any, path: str = "$"):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.get("properties", {}).items():
            yield from _walk(value, f"{path}.properties.{key}")
        if "items" in node:
            yield from _walk(node["items"], f"{path}.items")
        for i, branch in enumerate(node.get("anyOf", [])):
            yield from _walk(branch, f"{path}.anyOf[{i}]")


@pytest.mark.parametrize("source", REAL_WORLD, ids=["fastmcp", "mcp-filesystem", "mixed"])
def test_every_node_of_a_converted_schema_is_in_the_gemini_subset(source: dict[str, Any]) -> None:
    converted = to_gemini_schema(source)
    text = json.dumps(converted)
    for banned in ("$ref", "$defs", "additionalProperties", "const", "oneOf", "allOf",
                   "title", "default", "uniqueItems", "$schema"):
        assert f'"{banned}"' not in text
    for path, node in _walk(converted):
        assert set(node) <= set(GEMINI_KEYWORDS), path
        assert not isinstance(node.get("type"), list), path
        if "enum" in node:
            assert node.get("type") == "string", path
            assert all(isinstance(v, str) for v in node["enum"]), path
        for name in node.get("required", []):
            assert name in node.get("properties", {}), path
        if "format" in node:
            assert (node.get("type"), node["format"]) in {
                ("string", "enum"), ("string", "date-time"), ("number", "float"),
                ("number", "double"), ("integer", "int32"), ("integer", "int64")}, path


def test_the_fastmcp_shape_keeps_its_meaning() -> None:
    assert to_gemini_schema(REAL_WORLD[0]) == {
        "type": "object", "properties": {"requests": {"type": "array", "items": {
            "type": "object", "properties": {
                "op": {"type": "string", "enum": ["insert_text", "delete_text"]},
                "text": {"type": "string", "nullable": True}},
            "required": ["op"]}}},
        "required": ["requests"]}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_anthropic_and_openai_receive_the_schema_as_is(provider: str) -> None:
    source = REAL_WORLD[2]
    exported = export_parameters(provider, source)
    assert exported == source and exported is not source


def test_gemini_export_is_the_conversion_and_unknown_providers_fail() -> None:
    assert export_parameters("gemini", REAL_WORLD[1]) == to_gemini_parameters(REAL_WORLD[1])
    with pytest.raises(ValueError, match="unknown provider"):
        export_parameters("cohere", {})


def test_deep_nesting_is_cut_off_not_a_recursion_error() -> None:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(500):
        node = {"type": "object", "properties": {"x": node}}
    converted = to_gemini_schema(node)
    depth = 0
    while "properties" in converted:
        converted, depth = converted["properties"]["x"], depth + 1
    assert converted == {"type": "object"} and depth < 100
