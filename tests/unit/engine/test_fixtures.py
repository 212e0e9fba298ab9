"""Every real recording in shared/fixtures/providers yields the values of its .expected.json.

Keys both sides have are compared recursively; two exceptions, as the fixtures README says: a
tool-call ``id`` that is null there (the provider sent none), and ``error``, where the file keeps
the provider's raw error object: an error must be reported, with the right kind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apps.engine.replay import chunked, replay
from tests.conftest import FIXTURES

PROTOCOL_OF_DIR = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai-compatible": "openai",
    "gemini": "gemini",
}
REPLAY_KEYS = (
    "text", "reasoning", "reasoning_signatures", "thought_signatures", "redacted_thinking",
    "tool_calls", "usage", "finish_reason", "citations", "grounding_metadata",
)
# The kind each recorded in-stream error must be classified as.
ERROR_KINDS = {"openai-compatible/groq-error-event.sse": "invalid_request"}


def recordings() -> list[Path]:
    return sorted(FIXTURES.glob("*/*.sse"))


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def assert_matches(got: Any, expected: Any, where: str) -> None:
    """Compare every key both dicts have, recursively; lists element by element."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in expected.keys() & got.keys():
            if key == "id" and expected[key] is None and where.startswith("tool_calls"):
                continue
            assert_matches(got[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list) and isinstance(got, list):
        assert len(got) == len(expected), f"{where}: {len(got)} items, expected {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert_matches(g, e, f"{where}[{i}]")
    else:
        assert got == expected, f"{where}: got {got!r}, expected {expected!r}"


def test_the_recordings_are_there() -> None:
    assert len(recordings()) >= 35


@pytest.mark.parametrize("chunk_size", [None, 1, 3, 64, 4096])
@pytest.mark.parametrize("path", recordings(), ids=_name)
def test_recording_yields_expected_values(path: Path, chunk_size: int | None) -> None:
    expected = json.loads(path.with_name(path.name.removesuffix(".sse") + ".expected.json")
                          .read_text())
    got = replay(PROTOCOL_OF_DIR[path.parent.name], chunked(path.read_bytes(), chunk_size))
    for key in REPLAY_KEYS:
        if key in expected:
            assert_matches(got[key], expected[key], key)
    if expected.get("error") is None:
        assert got["error"] is None, got["error"]
    else:
        assert got["error"] is not None, "the in-stream error was not reported"
        assert got["error"]["kind"] == ERROR_KINDS[_name(path)]
        assert got["error"]["message"]
