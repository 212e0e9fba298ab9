"""Show a tool parameter schema as a provider receives it, for people chasing a rejection.

Usage::

    python -m apps.engine.schema --provider gemini|anthropic|openai FILE

FILE holds a JSON Schema (a tool's ``parameters``, as confab stores it). Prints the schema
exactly as it is sent: unchanged for ``anthropic`` (``input_schema``) and ``openai``
(``function.parameters``), converted to Gemini's Schema subset for ``gemini``
(``functionDeclarations[].parameters``; rules in ``apps.engine.providers.schema``).
Exits 2 with a message on stderr when FILE cannot be read, is not JSON, or is not an object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from apps.engine.providers.schema import export_parameters

__all__ = ["load_schema", "main"]

PROVIDERS = ("anthropic", "gemini", "openai")


class SchemaFileError(Exception):
    """FILE cannot serve as a schema; the message says why."""


def load_schema(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; SchemaFileError when unreadable, not JSON, or no object."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SchemaFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SchemaFileError(f"cannot read {path}: not UTF-8 text ({exc.reason})") from exc
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaFileError(
            f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc
    if not isinstance(schema, dict):
        raise SchemaFileError(f"{path} must hold a JSON Schema object, not {type(schema).__name__}")
    return schema


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m apps.engine.schema",
        description="Print a tool parameter schema exactly as it is sent to a provider.",
    )
    parser.add_argument("--provider", required=True, choices=PROVIDERS)
    parser.add_argument("file", type=Path, help="a JSON Schema (a tool's parameters)")
    args = parser.parse_args(argv)
    try:
        schema = load_schema(args.file)
    except SchemaFileError as exc:
        print(f"schema: {exc}", file=sys.stderr)
        return 2
    json.dump(export_parameters(args.provider, schema), sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
