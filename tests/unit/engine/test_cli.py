"""The inspection commands, run as a person runs them: `python -m apps.engine.replay` and
`python -m apps.engine.classify` in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from apps.engine.replay import chunked, replay
from tests.conftest import FIXTURES, ROOT
from tests.unit.engine.test_fixtures import PROTOCOL_OF_DIR, recordings


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("path", recordings(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_replay_prints_the_summary_of_each_recording(path: Path) -> None:
    protocol = PROTOCOL_OF_DIR[path.parent.name]
    done = run("apps.engine.replay", "--provider", protocol, "--chunk-size", "5", str(path))
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed == json.loads(json.dumps(replay(protocol, chunked(path.read_bytes(), None))))
    assert {"text", "reasoning", "reasoning_signatures", "thought_signatures",
            "redacted_thinking", "tool_calls", "usage", "finish_reason", "error", "citations",
            "grounding_metadata"} <= printed.keys()


def test_replay_reports_an_in_stream_error_and_still_exits_zero() -> None:
    path = FIXTURES / "openai-compatible" / "groq-error-event.sse"
    done = run("apps.engine.replay", "--provider", "openai", str(path))
    assert done.returncode == 0
    assert json.loads(done.stdout)["error"]["kind"] == "invalid_request"


def test_replay_fails_clearly_on_an_unreadable_file(tmp_path: Path) -> None:
    done = run("apps.engine.replay", "--provider", "gemini", str(tmp_path / "missing.sse"))
    assert done.returncode != 0
    assert "cannot read" in done.stderr and "missing.sse" in done.stderr
    assert done.stdout == ""


def test_replay_rejects_an_unknown_provider(tmp_path: Path) -> None:
    done = run("apps.engine.replay", "--provider", "cohere", str(tmp_path))
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_classify_prints_kind_and_retry_after(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_text('{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}')
    done = run("apps.engine.classify", "--provider", "anthropic", "--status", "429",
               "--header", "Retry-After: 5", str(body))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"kind": "rate_limited", "retry_after_s": 5.0}


def test_classify_reads_gemini_retry_info_from_the_body(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"error": {
        "code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}],
    }}))
    done = run("apps.engine.classify", "--provider", "gemini", "--status", "429", str(body))
    assert json.loads(done.stdout) == {"kind": "rate_limited", "retry_after_s": 37.0}


def test_classify_finds_context_overflow_in_an_openai_body(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_text('{"error":{"message":"This model\'s maximum context length is 4097 tokens. '
                    'However, you requested 4120 tokens","type":"invalid_request_error",'
                    '"code":"context_length_exceeded"}}')
    done = run("apps.engine.classify", "--provider", "openai", "--status", "400", str(body))
    assert json.loads(done.stdout) == {"kind": "context_length_exceeded", "retry_after_s": None}


def test_classify_fails_clearly_on_a_bad_header_or_file(tmp_path: Path) -> None:
    bad_header = run("apps.engine.classify", "--provider", "openai", "--status", "500",
                     "--header", "no-colon", str(tmp_path))
    assert bad_header.returncode == 2 and "Name: value" in bad_header.stderr
    missing = run("apps.engine.classify", "--provider", "openai", "--status", "500",
                  str(tmp_path / "nope"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
