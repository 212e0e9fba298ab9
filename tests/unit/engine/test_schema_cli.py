"""`python -m apps.engine.schema`, run as a person runs it, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from apps.engine.providers.schema import to_gemini_schema
from tests.conftest import ROOT

SCHEMA = {
    "$defs": {"Address": {"type": "object", "title": "Address",
                          "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    "type": "object", "additionalProperties": False,
    "properties": {"name": {"type": ["string", "null"]}, "address": {"$ref": "#/$defs/Address"},
                   "mode": {"const": "strict"}},
    "required": ["address"],
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "apps.engine.schema", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "tool.json"
    path.write_text(json.dumps(SCHEMA), encoding="utf-8")
    return path


def test_gemini_prints_the_converted_schema(schema_file: Path) -> None:
    done = run("--provider", "gemini", str(schema_file))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == to_gemini_schema(SCHEMA) == {
        "type": "object",
        "properties": {"name": {"type": "string", "nullable": True},
                       "address": {"type": "object", "properties": {"city": {"type": "string"}},
                                   "required": ["city"]},
                       "mode": {"type": "string", "enum": ["strict"]}},
        "required": ["address"],
    }


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_anthropic_and_openai_print_the_schema_as_is(schema_file: Path, provider: str) -> None:
    done = run("--provider", provider, str(schema_file))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == SCHEMA


def test_non_ascii_text_is_printed_as_is(tmp_path: Path) -> None:
    path = tmp_path / "ü.json"
    path.write_text(json.dumps({"type": "string", "description": "Größe in µm"}),
                    encoding="utf-8")
    done = run("--provider", "gemini", str(path))
    assert done.returncode == 0
    assert "Größe in µm" in done.stdout


def test_a_missing_file_fails_clearly(tmp_path: Path) -> None:
    done = run("--provider", "gemini", str(tmp_path / "missing.json"))
    assert done.returncode == 2
    assert "cannot read" in done.stderr and "missing.json" in done.stderr
    assert done.stdout == ""


def test_a_directory_fails_clearly(tmp_path: Path) -> None:
    done = run("--provider", "gemini", str(tmp_path))
    assert done.returncode == 2 and "cannot read" in done.stderr


def test_invalid_json_fails_with_the_position(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"type": "object",\n "properties": {,}}', encoding="utf-8")
    done = run("--provider", "openai", str(path))
    assert done.returncode == 2
    assert "not valid JSON" in done.stderr and "line 2" in done.stderr
    assert done.stdout == ""


def test_json_that_is_not_an_object_fails(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text("[1, 2]", encoding="utf-8")
    done = run("--provider", "gemini", str(path))
    assert done.returncode == 2 and "JSON Schema object" in done.stderr


def test_binary_garbage_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "blob.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    done = run("--provider", "gemini", str(path))
    assert done.returncode == 2 and "cannot read" in done.stderr


def test_an_unknown_provider_is_refused(schema_file: Path) -> None:
    done = run("--provider", "cohere", str(schema_file))
    assert done.returncode != 0 and "invalid choice" in done.stderr
