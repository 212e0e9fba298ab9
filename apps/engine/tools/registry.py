"""The tools of one run, by name, with their compiled argument validators."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from jsonschema import Draft202012Validator

from apps.engine.messages import ToolDefinition
from apps.engine.providers import tool_param
from apps.engine.tools.base import Tool, ToolCategory

__all__ = ["ToolRegistry", "arguments_problem"]

_COMPILED_MAX = 4096
_compiled: dict[str, Draft202012Validator] = {}
"""Validators of the schemas (canonical JSON) already found valid in this process: every run
registers the same built-in and warm MCP tools, and ``check_schema`` costs about a millisecond
each, compiling a validator a tenth of that. A validator is immutable, so runs share it; a
schema is found by its content, so a changed one is checked and compiled anew."""


class ToolRegistry:
    """Tools by unique name; ``validate`` checks arguments against each tool's JSON Schema with
    ``jsonschema`` (Draft 2020-12), the validator compiled once per tool.

    Raises ValueError on a duplicate name and ``jsonschema.SchemaError`` on an invalid schema,
    at registration: a broken tool is a programming error, found before any run.
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, Draft202012Validator] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add ``tool``; ValueError if its name is taken."""
        name = tool.spec.name
        if name in self._tools:
            raise ValueError(f"a tool named {name!r} is already registered")
        validator = _compile(tool.spec.parameters)
        self._tools[name] = tool
        self._validators[name] = validator

    def unregister(self, name: str) -> None:
        """Remove the tool ``name`` if present (MCP list_changed refreshes)."""
        self._tools.pop(name, None)
        self._validators.pop(name, None)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def definitions(self) -> list[ToolDefinition]:
        """What the model is offered, in registration order."""
        return [tool.spec.definition() for tool in self._tools.values()]

    def export(self, protocol: str) -> list[dict[str, Any]]:
        """The tools as ``protocol`` ("anthropic", "openai", "gemini") receives them: Anthropic
        ``{name, description, input_schema}``, OpenAI ``{type: function, function}``, Gemini
        function declarations with the schema converted to its subset."""
        convert = tool_param(protocol)
        return [convert(definition) for definition in self.definitions()]

    def validate(self, name: str, arguments: dict[str, Any]) -> str | None:
        """None when ``arguments`` fit the schema, else a message the model can act on (also
        when the tool went away meanwhile, e.g. an MCP server's ``tools/list_changed``)."""
        validator = self._validators.get(name)
        if validator is None:
            return f"The tool {name!r} is no longer available; choose another."
        return _problem(validator, name, arguments)

    def subset(self, *, names: Iterable[str] | None = None,
               exclude_categories: Iterable[ToolCategory] = ()) -> ToolRegistry:
        """A registry with the chosen tools (a sub-agent's tool subset)."""
        wanted = None if names is None else set(names)
        excluded = set(exclude_categories)
        return ToolRegistry(
            tool for tool in self._tools.values()
            if (wanted is None or tool.spec.name in wanted)
            and tool.spec.category not in excluded
        )


def arguments_problem(name: str, schema: dict[str, Any], arguments: object) -> str | None:
    """None when ``arguments`` fit the JSON Schema ``schema`` (Draft 2020-12) of the tool
    ``name``, else the message ``ToolRegistry.validate`` gives: for a host that checks
    arguments a person edited against the schema an ``awaiting_approval`` event carried.
    Raises ``jsonschema.SchemaError`` when ``schema`` is not one."""
    Draft202012Validator.check_schema(schema)
    return _problem(Draft202012Validator(schema), name, arguments)


def _problem(validator: Draft202012Validator, name: str, arguments: object) -> str | None:
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    lines = [f"- {_where(e.absolute_path)}: {e.message}" for e in errors[:10]]
    return "Invalid arguments for tool " + repr(name) + ":\n" + "\n".join(lines)


def _where(path: Any) -> str:
    parts = list(path)
    return "arguments" + "".join(f"[{p!r}]" for p in parts) if parts else "arguments"


def _compile(schema: dict[str, Any]) -> Draft202012Validator:
    """The validator of ``schema``, checked (SchemaError) and compiled once per distinct valid
    schema."""
    try:
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):  # not plain JSON: check it every time
        Draft202012Validator.check_schema(schema)
        return Draft202012Validator(schema)
    validator = _compiled.get(key)
    if validator is None:
        Draft202012Validator.check_schema(schema)
        validator = Draft202012Validator(schema)
        if len(_compiled) < _COMPILED_MAX:
            _compiled[key] = validator
    return validator
