"""Tool parameter schemas as each provider receives them (DESIGN 2.1, 2.3).

Tools are stored with a JSON Schema in OpenAI's function form. Anthropic (``input_schema``) and
OpenAI-compatible servers (``parameters``) take that schema as is. Gemini's
``functionDeclarations[].parameters`` is a ``Schema`` proto, "a select subset of an OpenAPI 3.0
schema object" (https://ai.google.dev/api/caching#Schema): an unknown keyword anywhere makes
the whole request fail with 400 ``Unknown name "..."``, ``type`` is one enum value, not a list,
and is required; ``enum`` is for STRING only, ``items`` for ARRAY only (and required there),
``properties``/``required`` for OBJECT only ("only allowed for OBJECT type"). One bad node in
one tool fails every request. :func:`to_gemini_schema` rewrites a schema into that subset
(shared/cases/provider README, SCHEMA-SANITIZE; cases 047, 048, 049, 051; and the MCP servers
whose schemas broke Gemini clients, in tests/unit/engine/test_gemini_schema_subset.py):

1. ``$ref`` is inlined (JSON pointers into the document: ``#/$defs/X``, ``#/definitions/X``,
   ``#``); a reference already being expanded on the current path (recursion) or nested past
   :data:`MAX_REF_DEPTH` becomes a permissive ``{"type": "object"}``. ``allOf`` is merged.
2. Null is ``nullable: true``: ``type: [T, "null"]``, an ``anyOf``/``oneOf`` null branch, a
   ``None`` in ``enum``, ``const: null``.
3. Other unions are ``anyOf`` (``oneOf`` and multi-type ``type`` lists included); an ``anyOf``
   made only of string enums collapses to one ``enum``; duplicate branches merge.
4. ``const`` is a one-value ``enum``. String enums keep ``type: "string"``; an enum of numbers or
   booleans cannot be a Gemini enum, so its values move into the description instead.
5. ``format`` is kept only where Gemini documents it: STRING ``enum``/``date-time``, NUMBER
   ``float``/``double``, INTEGER ``int32``/``int64``.
6. Only the keywords of :data:`GEMINI_KEYWORDS` survive, at every depth (an allow-list: deny
   lists break on the next keyword a schema generator invents); ``required`` keeps only declared
   properties and an empty ``properties`` is left out, since Gemini rejects both ("property is
   not defined", "should be non-empty for OBJECT type").
7. Every keyword sits on the type it belongs to (:data:`TYPE_KEYWORDS`); the others are dropped
   (a string's ``items`` hint, a ``minItems`` beside ``type: "string"``). A node without a type
   takes the one its keywords imply (``properties`` object, ``items`` array, ``pattern``
   string, ``minimum`` number); a node that states no type at all (``{}``, ``true``, a
   description alone: any value) becomes :data:`ANY_VALUE`, an ``anyOf`` of every type, since
   Gemini has no "any". An array without ``items`` gets ``ANY_VALUE`` items. Counts
   (``minItems``, ``maxLength``...) must be non-negative integers, bounds numbers.
8. The top level is an OBJECT (Gemini: "schema at top-level requires ... 'type'").
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import unquote

__all__ = [
    "ANY_VALUE",
    "GEMINI_KEYWORDS",
    "MAX_REF_DEPTH",
    "SchemaProvider",
    "export_parameters",
    "to_gemini_parameters",
    "to_gemini_schema",
]

SchemaProvider = Literal["anthropic", "openai", "gemini"]

GEMINI_KEYWORDS = (
    "type", "format", "description", "nullable", "enum", "properties", "required",
    "propertyOrdering", "items", "anyOf", "minItems", "maxItems", "minimum", "maximum",
    "minLength", "maxLength", "pattern", "minProperties", "maxProperties",
)
"""Keywords sent to Gemini, in output order. ``title``, ``default`` and ``example`` exist in the
proto but only document; they are dropped (``title``/``default`` beside a null branch were a
reported rejection, and 048 expects inlined models without titles)."""

MAX_REF_DEPTH = 16
"""How many ``$ref`` expansions may nest on one path before the rest is cut off."""

MAX_NESTING = 48
"""Schema nesting beyond this depth is replaced by a permissive node (a guard, not a limit real
tool schemas reach)."""

_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})
_FORMATS = {
    "string": frozenset({"enum", "date-time"}),
    "number": frozenset({"float", "double"}),
    "integer": frozenset({"int32", "int64"}),
}
TYPE_KEYWORDS = {
    "object": ("properties", "required", "propertyOrdering", "minProperties", "maxProperties"),
    "array": ("items", "minItems", "maxItems"),
    "string": ("enum", "format", "minLength", "maxLength", "pattern"),
    "number": ("format", "minimum", "maximum"),
    "integer": ("format", "minimum", "maximum"),
    "boolean": (),
}
"""The Gemini keywords each type allows; ``description`` and ``nullable`` go anywhere."""

ANY_VALUE: dict[str, Any] = {"anyOf": [
    {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "object"},
    {"type": "array", "items": {"type": "string"}},
]}
"""What a schema that admits any value becomes: Gemini has no untyped node."""

_COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")
_BOUNDS = ("minimum", "maximum")
# A node without a type is given the first type whose keywords it uses.
_IMPLIED_BY = (
    ("object", ("properties", "minProperties", "maxProperties")),
    ("array", ("items", "prefixItems", "minItems", "maxItems")),
    ("string", ("minLength", "maxLength", "pattern")),
    ("number", ("minimum", "maximum")),
)
# Keywords that belong to one JSON type: when a ``type`` list splits into ``anyOf`` branches,
# each branch takes the keywords of its own type.
_JSON_TYPE_KEYWORDS = {
    "object": ("properties", "required", "propertyOrdering", "minProperties", "maxProperties",
               "additionalProperties"),
    "array": ("items", "prefixItems", "minItems", "maxItems"),
    "string": ("format", "pattern", "minLength", "maxLength", "enum", "const"),
    "number": ("format", "minimum", "maximum", "enum", "const"),
    "integer": ("format", "minimum", "maximum", "enum", "const"),
    "boolean": ("enum", "const"),
}
_PLACEHOLDER: dict[str, Any] = {"type": "object"}


def export_parameters(provider: SchemaProvider | str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The tool parameter schema exactly as sent to ``provider``.

    ``anthropic`` (``input_schema``) and ``openai`` (``function.parameters``): the schema
    unchanged (a deep copy). ``gemini`` (``functionDeclarations[].parameters``):
    :func:`to_gemini_parameters`. ValueError for another provider.
    """
    if provider in ("anthropic", "openai"):
        return copy.deepcopy(dict(schema))
    if provider == "gemini":
        return to_gemini_parameters(schema)
    raise ValueError(f"unknown provider {provider!r}; expected anthropic, openai or gemini")


def to_gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Rewrite a JSON Schema into the subset Gemini's ``Schema`` accepts (rules 1-7 of the
    module docstring). Never raises on odd input: what cannot be expressed is dropped or
    loosened."""
    if not isinstance(schema, Mapping):
        return _any_value({})
    return _GeminiConverter(schema).convert(schema, refs=(), depth=0)


def to_gemini_parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's parameter schema as ``functionDeclarations[].parameters``: the conversion of
    :func:`to_gemini_schema` with an OBJECT at the top (rule 8). An untyped top level is an
    object; a top level of another type (no valid tool has one) keeps only its description."""
    if not isinstance(schema, Mapping):
        return {"type": "object"}
    root = _GeminiConverter(schema).convert(schema, refs=(), depth=0, fill=False)
    alternatives = [b for b in root.pop("anyOf", ()) if b.get("type") == "object"]
    if root.get("type") not in (None, "object"):
        root = {k: root[k] for k in ("description",) if k in root}
    root["type"] = "object"
    if alternatives:  # object alternatives: a union of argument shapes
        root["anyOf"] = alternatives
    return _ordered(root)


class _GeminiConverter:
    """One conversion: holds the document root that ``$ref`` pointers resolve against."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def convert(self, node: Any, *, refs: tuple[str, ...], depth: int,
                fill: bool = True) -> dict[str, Any]:
        """Convert one schema node; ``refs``: the references expanded on the path to it.
        ``fill``: give a node that states no type :data:`ANY_VALUE` (not for union branches,
        where a branch that says nothing is dropped instead)."""
        if not isinstance(node, Mapping):
            # a boolean schema: true admits any value (a property that is false, which admits
            # none, is left out by object_keywords)
            return _any_value({}) if fill else {}
        if depth > MAX_NESTING:
            return dict(_PLACEHOLDER)
        expanded = self.expand(node, refs)
        if expanded is None:
            return _placeholder(node)
        node, refs = expanded
        nullable = node.get("nullable") is True or _has_null(node)
        union = _union_branches(node)
        if union is not None:
            out = self.union(node, union, refs=refs, depth=depth)
        else:
            out = self.single(node, refs=refs, depth=depth)
        if nullable:
            out["nullable"] = True
        if fill and "type" not in out and "anyOf" not in out:
            out = _any_value(out)
        return _ordered(out)

    # -- references and allOf ---------------------------------------------------------------
    def expand(self, node: Mapping[str, Any], refs: tuple[str, ...]
               ) -> tuple[dict[str, Any], tuple[str, ...]] | None:
        """Inline ``$ref`` (sibling keywords win over the target) and merge ``allOf``; None
        when the reference recurses or cannot be resolved."""
        node = dict(node)
        while isinstance(ref := node.get("$ref"), str):
            if ref in refs or len(refs) >= MAX_REF_DEPTH:
                return None
            target = self.resolve(ref)
            if target is None:
                return None
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings}
            refs = (*refs, ref)
        if isinstance(node.get("allOf"), list):
            node = self.merge_all_of(node, refs)
        return node, refs

    def resolve(self, ref: str) -> dict[str, Any] | None:
        """The node a local JSON pointer (RFC 6901, in a URI fragment) names, or None."""
        if not ref.startswith("#"):
            return None  # remote references are not fetched
        target: Any = self.root
        for token in filter(None, unquote(ref[1:]).split("/")):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, Mapping) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                return None
        return dict(target) if isinstance(target, Mapping) else None

    def merge_all_of(self, node: dict[str, Any], refs: tuple[str, ...]) -> dict[str, Any]:
        """Fold ``allOf`` members into the node: properties and required are unioned, other
        keywords are taken from the member only where the node has none."""
        merged = {k: v for k, v in node.items() if k != "allOf"}
        for member in node["allOf"]:
            expanded = self.expand(member, refs) if isinstance(member, Mapping) else None
            if expanded is None:
                continue
            part = expanded[0]
            for key, value in part.items():
                if key == "properties" and isinstance(value, Mapping):
                    own = merged.get("properties")
                    merged["properties"] = {**value, **(own if isinstance(own, Mapping) else {})}
                elif key == "required" and isinstance(value, list):
                    merged["required"] = _unique([*_as_list(merged.get("required")), *value])
                else:
                    merged.setdefault(key, value)
        return merged

    # -- unions ----------------------------------------------------------------------------
    def union(self, node: dict[str, Any], branches: list[Any], *, refs: tuple[str, ...],
              depth: int) -> dict[str, Any]:
        """``anyOf``/``oneOf``/type lists without their null branches: one branch is merged
        into the node, string-enum branches collapse to one enum, the rest stay ``anyOf``.

        Branches that state nothing Gemini can express (``{"required": [...]}`` alternatives
        beside ``properties``, say) are dropped, so the node keeps its own shape."""
        from_type_list = "anyOf" not in node and "oneOf" not in node
        drop = {"anyOf", "oneOf", "nullable"}
        if from_type_list:  # the type keywords went into the branches
            drop |= {"type", *_ALL_JSON_TYPED}
        shared = {k: v for k, v in node.items() if k not in drop}
        converted: list[dict[str, Any]] = []
        for branch in branches:
            if _is_null(branch):
                continue
            out = self.convert(branch, refs=refs, depth=depth + 1, fill=False)
            if out.pop("nullable", False):  # a nullable branch makes the whole node nullable
                shared["nullable"] = True
            if out and out not in converted:
                converted.append(out)
        own = self.single(shared, refs=refs, depth=depth)
        if len(converted) <= 1:
            branch = converted[0] if converted else {}
            if "type" in own and branch.get("type") not in (None, own["type"]):
                # the node's type contradicts its one branch's (no value has both): the node
                # wins, and the branch's keywords, which belong to the other type, go
                branch = {k: branch[k] for k in ("description",) if k in branch}
            return {**branch, **own}
        if all(_is_string_enum(b) for b in converted) and own.get("type") in (None, "string"):
            values = _unique([v for b in converted for v in b["enum"]])
            return {**own, "type": "string", "enum": values}
        branches_out = [b if "type" in b or "anyOf" in b else _any_value(b) for b in converted]
        return {**own, "anyOf": [_ordered(b) for b in branches_out]}

    # -- one typed node --------------------------------------------------------------------
    def single(self, node: Mapping[str, Any], *, refs: tuple[str, ...], depth: int
               ) -> dict[str, Any]:
        """A node with at most one type: keep the keywords of that type (rule 7), converting
        children; an array gets items."""
        out: dict[str, Any] = {"nullable": True} if node.get("nullable") is True else {}
        kind = _type_of(node)
        if kind is not None:
            out["type"] = kind
        if isinstance(node.get("description"), str):
            out["description"] = node["description"]
        _enum_into(out, node)
        kind = out.get("type")
        allowed = TYPE_KEYWORDS.get(kind, ())
        if "format" in allowed and (fmt := node.get("format")) in _FORMATS[kind]:
            out["format"] = fmt
        if kind == "object":
            out.update(self.object_keywords(node, refs=refs, depth=depth))
        if kind == "array":
            out["items"] = self.items(node, refs=refs, depth=depth) or _any_value({})
        out.update({k: node[k] for k in _COUNTS if k in allowed and _is_count(node.get(k))})
        out.update({k: node[k] for k in _BOUNDS if k in allowed and _is_number(node.get(k))})
        if "pattern" in allowed and isinstance(node.get("pattern"), str):
            out["pattern"] = node["pattern"]
        return out

    def object_keywords(self, node: Mapping[str, Any], *, refs: tuple[str, ...], depth: int
                        ) -> dict[str, Any]:
        """``properties`` (converted; one whose schema is ``false`` may not be sent, so it is
        left out), ``required`` and ``propertyOrdering`` limited to them."""
        props = node.get("properties")
        if isinstance(props, Mapping):
            props = {name: sub for name, sub in props.items() if sub is not False}
        if not isinstance(props, Mapping) or not props:
            return {}
        out: dict[str, Any] = {"properties": {
            str(name): self.convert(sub, refs=refs, depth=depth + 1) for name, sub in props.items()
        }}
        for key in ("required", "propertyOrdering"):
            names = [n for n in _as_list(node.get(key)) if isinstance(n, str) and n in props]
            if names:
                out[key] = _unique(names)
        return out

    def items(self, node: Mapping[str, Any], *, refs: tuple[str, ...], depth: int
              ) -> dict[str, Any] | None:
        """``items`` as one schema; a tuple form (``prefixItems`` or a list) becomes ``anyOf``."""
        items = node.get("items")
        tuple_form = node.get("prefixItems") if isinstance(node.get("prefixItems"), list) else None
        if isinstance(items, list):
            tuple_form, items = items, None
        if isinstance(items, Mapping):
            return self.convert(items, refs=refs, depth=depth + 1)
        if tuple_form:
            return self.convert({"anyOf": tuple_form}, refs=refs, depth=depth + 1)
        return None


_ALL_JSON_TYPED = frozenset(k for keys in _JSON_TYPE_KEYWORDS.values() for k in keys)


def _union_branches(node: Mapping[str, Any]) -> list[Any] | None:
    """The branches of a union node (None for a node with one type): ``anyOf`` + ``oneOf``,
    or a ``type`` list of two or more non-null types, each branch with its own keywords."""
    branches = [*_as_list(node.get("anyOf")), *_as_list(node.get("oneOf"))]
    if branches:
        return branches
    types = node.get("type")
    if not isinstance(types, list):
        return None
    real = _unique([t for t in types if isinstance(t, str) and t in _JSON_TYPES])
    if len(real) < 2:
        return None
    return [{"type": t, **{k: node[k] for k in _JSON_TYPE_KEYWORDS.get(t, ()) if k in node}}
            for t in real]


def _type_of(node: Mapping[str, Any]) -> str | None:
    """The single JSON type of a node (a one-type list counts), or the one its keywords imply
    (a string ``const``/``enum``, then :data:`_IMPLIED_BY`); None when it states none."""
    kind = node.get("type")
    if isinstance(kind, list):
        real = [t for t in kind if isinstance(t, str) and t != "null"]
        kind = real[0] if len(real) == 1 else None
    if isinstance(kind, str) and kind in _JSON_TYPES:
        return kind
    values = _enum_values(node)
    if values and all(isinstance(v, str) for v in values):
        return "string"
    if values:
        return None  # other literals: _enum_into gives their type
    for implied, keywords in _IMPLIED_BY:
        if any(_states(node, k) for k in keywords):
            return implied
    return None


def _states(node: Mapping[str, Any], keyword: str) -> bool:
    """Whether ``keyword`` says something in ``node`` (an empty ``properties`` does not)."""
    value = node.get(keyword)
    if keyword == "properties":
        return isinstance(value, Mapping) and bool(value)
    if keyword in ("items", "prefixItems"):
        return isinstance(value, Mapping | list)
    if keyword == "pattern":
        return isinstance(value, str)
    return _is_number(value)


def _enum_values(node: Mapping[str, Any]) -> list[Any]:
    """``const`` or ``enum`` values without null (null is ``nullable``)."""
    if "const" in node:
        values = [node["const"]]
    elif isinstance(node.get("enum"), list):
        values = node["enum"]
    else:
        return []
    return [v for v in values if v is not None]


def _enum_into(out: dict[str, Any], node: Mapping[str, Any]) -> None:
    """Set a string ``enum`` (with ``type: "string"``); other literal values, which a Gemini
    enum cannot hold without changing the argument's type, are stated in the description."""
    values = _enum_values(node)
    if not values:
        return
    if all(isinstance(v, str) for v in values) and out.get("type") in (None, "string"):
        out["type"] = "string"
        out["enum"] = _unique(values)
        return
    allowed = ", ".join(json.dumps(v, ensure_ascii=False) for v in _unique(values))
    note = f"Allowed values: {allowed}."
    out["description"] = f"{out['description']} {note}" if out.get("description") else note
    if out.get("type") is None:
        out.update(_literal_type(values))


def _literal_type(values: list[Any]) -> dict[str, str]:
    """The one JSON type of literal values, when they share one."""
    if all(isinstance(v, bool) for v in values):
        return {"type": "boolean"}
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return {"type": "integer"}
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return {"type": "number"}
    return {}


def _has_null(node: Mapping[str, Any]) -> bool:
    """Whether the node admits null through its type list, enum, const or a union branch."""
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if ("const" in node and node["const"] is None) or (
            isinstance(node.get("enum"), list) and None in node["enum"]):
        return True
    return any(_is_null(b) for b in [*_as_list(node.get("anyOf")), *_as_list(node.get("oneOf"))])


def _is_null(branch: Any) -> bool:
    """A branch that only admits null: ``{"type": "null"}``, ``const: null``, ``enum: [null]``."""
    if not isinstance(branch, Mapping):
        return False
    kind = branch.get("type")
    if kind == "null" or kind == ["null"]:
        return True
    return ("const" in branch and branch["const"] is None) or branch.get("enum") == [None]


def _is_string_enum(branch: Mapping[str, Any]) -> bool:
    return (branch.get("type") == "string" and isinstance(branch.get("enum"), list)
            and set(branch) <= {"type", "enum", "description", "format"})


def _any_value(out: Mapping[str, Any]) -> dict[str, Any]:
    """:data:`ANY_VALUE` keeping the node's description and nullability."""
    kept = {k: out[k] for k in ("description", "nullable") if k in out}
    return {**copy.deepcopy(ANY_VALUE), **kept}


def _placeholder(node: Mapping[str, Any]) -> dict[str, Any]:
    """What replaces a recursive or unresolvable reference: any object, keeping a sibling
    description so the model still knows what the field is."""
    out = dict(_PLACEHOLDER)
    if isinstance(node.get("description"), str):
        out["description"] = node["description"]
    return out


_GEMINI_TYPED = frozenset(k for keys in TYPE_KEYWORDS.values() for k in keys)


def _ordered(out: dict[str, Any]) -> dict[str, Any]:
    """The node as sent: the keywords its type allows (none of the typed ones on an untyped
    ``anyOf`` node), ``required``/``propertyOrdering`` naming declared properties only, in
    :data:`GEMINI_KEYWORDS` order (readable CLI output). A guard after the merges of unions and
    ``allOf``, which can bring a keyword to a node of another type."""
    allowed = TYPE_KEYWORDS.get(out.get("type"), ())
    node = {k: out[k] for k in GEMINI_KEYWORDS
            if k in out and (k not in _GEMINI_TYPED or k in allowed)}
    declared = node.get("properties") or {}
    for key in ("required", "propertyOrdering"):
        names = [n for n in node.pop(key, ()) if n in declared]
        if names:
            node[key] = names
    if node.get("type") == "array" and "items" not in node:
        node["items"] = _any_value({})
    return {k: node[k] for k in GEMINI_KEYWORDS if k in node}


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _unique(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen
