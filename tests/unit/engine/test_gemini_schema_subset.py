"""Converted schemas satisfy Gemini's documented subset (``gemini_subset``): the tool schemas of
public MCP servers that broke Gemini clients, and any schema at all (a property test).

Each MCP schema is the shape quoted in the public report of the failure (the URL beside it),
cut to the parameters that broke and the error Gemini answered.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.providers.schema import ANY_VALUE, to_gemini_parameters, to_gemini_schema
from tests.unit.engine.gemini_subset import problems

S = {"type": "string"}

MCP_SCHEMAS: dict[str, dict[str, Any]] = {
    # https://github.com/anomalyco/opencode/issues/13148 (Notion MCP, API-patch-page):
    # "parameters.properties[data].properties: only allowed for OBJECT type"
    "notion-untyped-object": {"type": "object", "properties": {"data": {
        "description": "The data required for updating a page",
        "properties": {"page_id": S}, "required": ["page_id"]}}},
    # https://github.com/anomalyco/opencode/issues/11889 (Notion MCP): "...[data].required:
    # only allowed for OBJECT type" on a node typed otherwise
    "notion-typed-string-with-object-keywords": {"type": "object", "properties": {"data": {
        "type": "string", "properties": {"page_id": S}, "required": ["page_id"]}}},
    # https://github.com/NousResearch/hermes-agent/pull/38972 (ClickUp clickup_filter_tasks):
    # "...properties[value].items: field predicate failed: $type == Type.ARRAY"
    "clickup-string-with-items": {"type": "object", "properties": {"custom_fields": {
        "type": "array", "items": {"type": "object", "properties": {
            "field_id": S, "operator": S,
            "value": {"type": "string", "items": S, "description": (
                "The value to compare against. For RANGE, provide an array of two strings.")}},
            "required": ["field_id", "operator"]}}}},
    # https://github.com/NousResearch/hermes-agent/issues/77617 (hound-mcp mcp_smart_fetch):
    # "...properties[actions].items: missing field"
    "hound-array-without-items": {"type": "object", "properties": {
        "url": S, "actions": {"type": "array", "description": "Browser actions to run"}},
        "required": ["url"]},
    # https://github.com/anomalyco/opencode/pull/12911 (the reference Memory MCP server):
    # oneOf of a bare array and a string
    "memory-oneof-bare-array": {"type": "object", "properties": {
        "observations": {"oneOf": [{"type": "array"}, {"type": "string"}]}}},
    # https://github.com/github/copilot-cli/issues/4623 (.NET ModelContextProtocol SDK):
    # type lists with null and a boolean schema `true` for an any-typed member
    "dotnet-sdk-nullable-lists": {"type": "object", "properties": {"args": {
        "type": ["array", "null"], "items": {
            "type": ["object", "null"], "properties": {"value": True}}}}},
    # https://github.com/CoplayDev/unity-mcp/issues/572 (unity-mcp manage_components):
    # "functionDeclaration `parameters.value` schema didn't specify the schema type field"
    "unity-untyped-value": {"type": "object", "properties": {
        "action": S, "value": {"description": "The value to set on the component property"}}},
    # https://github.com/anomalyco/opencode/issues/4512 (@mcp-pointer/server):
    # "Invalid value at '...enum[0]' (TYPE_STRING), 0"
    "pointer-integer-enum": {"type": "object", "properties": {
        "level": {"type": "integer", "enum": [0, 1, 2]}}},
    # https://github.com/anomalyco/opencode/pull/12911 (Obsidian mcp-tools):
    # "...any_of[0].enum: only allowed for STRING type"
    "obsidian-anyof-const": {"type": "object", "properties": {
        "format": {"anyOf": [{"const": "markdown"}, {"const": "json"}]}}},
    # https://github.com/google-gemini/gemini-cli/issues/13326 (Snowflake MCP create_object,
    # FastMCP): "reference to undefined schema at properties.target_object.anyOf.1"
    "snowflake-anyof-ref": {
        "$defs": {"Table": {"type": "object", "title": "Table", "properties": {
            "name": S, "columns": {"type": "array", "items": {"$ref": "#/$defs/Column"}}},
            "required": ["name"]},
            "Column": {"type": "object", "properties": {"name": S, "datatype": S,
                                                        "nullable": {"type": "boolean"}}}},
        "type": "object", "properties": {"target_object": {
            "anyOf": [{"type": "string"}, {"$ref": "#/$defs/Table"}], "title": "Target"}},
        "required": ["target_object"]},
    # https://github.com/anomalyco/opencode/issues/15408 (chrome-devtools-mcp):
    # 'Unknown name "contentEncoding" ... Cannot find field'
    "chrome-devtools-content-encoding": {"type": "object", "properties": {"files": {
        "type": "array", "items": {"type": "object", "properties": {
            "name": S, "data": {"type": "string", "contentEncoding": "base64",
                                "contentMediaType": "image/png"}}}}}},
    # https://github.com/nanbingxyz/5ire/issues/42 (the reference filesystem server):
    # 'Unknown name "additionalProperties" at ...items'
    "filesystem-additional-properties-in-items": {"type": "object", "properties": {
        "path": S, "edits": {"type": "array", "items": {
            "type": "object", "properties": {"oldText": S, "newText": S},
            "required": ["oldText", "newText"], "additionalProperties": False}}},
        "required": ["path", "edits"], "additionalProperties": False,
        "$schema": "http://json-schema.org/draft-07/schema#"},
    # https://github.com/google-gemini/gemini-cli/issues/23382: an MCP tool without
    # parameters sent as {} - "schema at top-level requires unspecified property 'type'"
    "no-parameters": {},
}


@pytest.mark.parametrize("name", MCP_SCHEMAS)
def test_mcp_server_schemas_that_broke_gemini_clients_convert_into_the_subset(name: str) -> None:
    assert problems(to_gemini_parameters(MCP_SCHEMAS[name])) == []


def _converted(name: str) -> dict[str, Any]:
    return to_gemini_parameters(MCP_SCHEMAS[name])


def test_the_converted_mcp_schemas_keep_their_meaning() -> None:
    assert _converted("notion-untyped-object")["properties"]["data"] == {
        "type": "object", "description": "The data required for updating a page",
        "properties": {"page_id": S}, "required": ["page_id"]}
    value = _converted("clickup-string-with-items")["properties"]["custom_fields"]["items"]
    assert value["properties"]["value"]["type"] == "string"
    assert value["required"] == ["field_id", "operator"]
    assert _converted("hound-array-without-items")["properties"]["actions"] == {
        "type": "array", "description": "Browser actions to run", "items": ANY_VALUE}
    assert _converted("dotnet-sdk-nullable-lists")["properties"]["args"] == {
        "type": "array", "nullable": True, "items": {
            "type": "object", "nullable": True, "properties": {"value": ANY_VALUE}}}
    target = _converted("snowflake-anyof-ref")["properties"]["target_object"]
    assert target["anyOf"][0] == S
    assert target["anyOf"][1]["properties"]["columns"]["items"]["properties"]["nullable"] == {
        "type": "boolean"}
    assert _converted("no-parameters") == {"type": "object"}


# -- any schema at all ----------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "page_id", "value", "type", "properties", "items", ""])
_SCALARS = (st.none() | st.booleans() | st.integers(-3, 10) | st.floats(-5, 5)
            | st.text(max_size=4))
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)
_TYPES = st.sampled_from(["string", "number", "integer", "boolean", "array", "object", "null",
                          "any", ""])
_TYPE = _TYPES | st.lists(_TYPES, max_size=3) | _JSON
_REFS = st.sampled_from(["#", "#/$defs/A", "#/$defs/B", "#/definitions/C", "#/$defs/Missing",
                         "#/properties/a", "https://example.com/s.json", "#/$defs/A/items"])
_FORMATS = st.sampled_from(["date-time", "enum", "uri", "int32", "int64", "float", "double",
                            "email", "date", ""])


def _schema_node(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """One node using any keyword of JSON Schema 2020-12 (and some it lacks), with values of
    any shape where a generator could put them; ``children`` for its subschemas."""
    nodes = children | st.lists(children, max_size=3)
    return st.fixed_dictionaries({}, optional={
        "type": _TYPE, "description": st.text(max_size=5) | _JSON, "nullable": _JSON,
        "properties": st.dictionaries(_NAMES, children, max_size=3) | _JSON,
        "required": st.lists(_NAMES, max_size=3) | _JSON,
        "propertyOrdering": st.lists(_NAMES, max_size=3),
        "items": nodes | st.booleans(), "prefixItems": st.lists(children, max_size=2),
        "anyOf": st.lists(children, max_size=3), "oneOf": st.lists(children, max_size=3),
        "allOf": st.lists(children, max_size=2), "not": children,
        "additionalProperties": children | st.booleans(), "$ref": _REFS,
        "enum": st.lists(_SCALARS, max_size=3) | _JSON, "const": _JSON, "format": _FORMATS,
        "minItems": _SCALARS, "maxItems": _SCALARS, "minLength": _SCALARS,
        "maxLength": _SCALARS, "minProperties": _SCALARS, "maxProperties": _SCALARS,
        "minimum": _SCALARS, "maximum": _SCALARS, "exclusiveMinimum": _SCALARS,
        "pattern": _SCALARS, "multipleOf": _SCALARS, "uniqueItems": _JSON, "title": _JSON,
        "default": _JSON, "examples": _JSON, "contentEncoding": _JSON, "$schema": _JSON,
        "if": children, "then": children, "patternProperties": _JSON,
    })


_LEAVES = st.booleans() | st.fixed_dictionaries({}, optional={
    "type": _TYPE, "description": st.text(max_size=5), "enum": st.lists(_SCALARS, max_size=3),
    "const": _JSON, "format": _FORMATS, "minLength": _SCALARS, "minimum": _SCALARS,
    "$ref": _REFS, "nullable": _JSON})
_SCHEMAS = st.recursive(_LEAVES, _schema_node, max_leaves=12)
_DOCUMENTS = st.tuples(_SCHEMAS, st.dictionaries(st.sampled_from(["A", "B"]), _SCHEMAS,
                                                 max_size=2)).map(
    lambda pair: {**pair[0], "$defs": pair[1]} if isinstance(pair[0], dict) else pair[0])


@pytest.mark.parametrize(("document", "expected"), [
    ({"type": [None, []]}, {"type": "object"}),  # junk in a type list
    ({"type": "object", "properties": {"a": {"type": ["string", {}, "integer"]}}},
     {"type": "object", "properties": {"a": {"anyOf": [S, {"type": "integer"}]}}}),
    ({"properties": None, "allOf": [{"properties": {"a": S}}]},  # allOf over odd properties
     {"type": "object", "properties": {"a": S}}),
    ({"properties": {"a": S}, "required": True}, {"type": "object", "properties": {"a": S}}),
    ({"type": "object", "properties": {"a": {"type": "string", "anyOf": [
        {"format": "int32", "type": "integer"}]}}},  # a branch whose type contradicts the node's
     {"type": "object", "properties": {"a": S}}),
], ids=["type-list-junk", "type-list-mixed", "allOf-odd-properties", "required-not-a-list",
        "branch-type-contradicts"])
def test_odd_values_the_property_test_found_convert_without_raising(
        document: dict[str, Any], expected: dict[str, Any]) -> None:
    assert to_gemini_parameters(document) == expected


@settings(max_examples=400, deadline=None)
@given(_DOCUMENTS)
def test_every_converted_schema_satisfies_the_documented_subset(document: Any) -> None:
    before = copy.deepcopy(document)
    parameters = to_gemini_parameters(document)
    assert problems(parameters) == []
    assert problems(to_gemini_schema(document), root=False) == []
    json.dumps(parameters)  # plain JSON, sendable as is
    assert document == before  # the stored schema is not touched
