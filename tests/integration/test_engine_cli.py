"""`python -m apps.engine run` as a person runs it, against a fakellm process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.engine.events import RUNTIME_EVENT
from tests.conftest import ROOT
from tests.integration.fakellm_server import fakellm_process

SCRIPT = json.dumps({"script": [
    {"text": "Writing a file."},
    {"tool_call": {"name": "Write", "arguments": {"file_path": "notes.txt", "content": "hi\n"}}},
    {"tool_call": {"name": "Bash", "arguments": {"command": "cat notes.txt"}}},
    {"text": "All done."},
]})


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with fakellm_process() as url:
        yield url


def run_engine(origin: str, protocol: str, prompt: str, *extra: str,
               workspace: Path | None = None) -> subprocess.CompletedProcess[str]:
    base = origin + "/v1" if protocol == "openai" else origin
    args = [sys.executable, "-m", "apps.engine", "run", "--provider", protocol, "--base-url",
            base, "--model", "confab-offline", *extra]
    if workspace is not None:
        args += ["--workspace", str(workspace)]
    return subprocess.run([*args, prompt], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("protocol", ["anthropic", "openai", "gemini"])
def test_a_full_offline_run_prints_the_stream(origin: str, protocol: str,
                                              tmp_path: Path) -> None:
    done = run_engine(origin, protocol, SCRIPT, workspace=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Writing a file." in done.stdout and "All done." in done.stdout
    assert "→ Write" in done.stdout and "│ hi" in done.stdout
    assert (tmp_path / "notes.txt").read_text() == "hi\n"
    assert "run completed after 2 step(s)" in done.stderr


def test_jsonl_prints_runtime_events(origin: str, tmp_path: Path) -> None:
    done = run_engine(origin, "anthropic", SCRIPT, "--jsonl", workspace=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [RUNTIME_EVENT.validate_json(line) for line in done.stdout.splitlines()]
    assert events[0].kind == "run_started" and events[-1].kind == "run_ended"
    assert [e.name for e in events if e.kind == "tool_result"] == ["Write", "Bash"]


def test_a_failed_run_exits_non_zero(origin: str, tmp_path: Path) -> None:
    failing = json.dumps({"script": [{"error": {"status": 401, "message": "bad key"}}]})
    done = run_engine(origin, "openai", failing, workspace=tmp_path)
    assert done.returncode == 1
    assert "auth: bad key" in done.stderr


def test_bad_arguments_exit_two() -> None:
    done = subprocess.run([sys.executable, "-m", "apps.engine", "run", "--provider", "nope",
                           "--base-url", "x", "--model", "m", "hi"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_ctrl_c_stops_the_run_cleanly_and_prints_its_end(tmp_path: Path) -> None:
    long = json.dumps({"script": [{"text": " ".join(f"w{i}" for i in range(400))}]})
    with fakellm_process(rate=50) as slow:
        process = subprocess.Popen(
            [sys.executable, "-m", "apps.engine", "run", "--provider", "anthropic",
             "--base-url", slow, "--model", "m", "--jsonl", "--workspace", str(tmp_path), long],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL)
        assert process.stdout is not None
        for line in process.stdout:  # wait until the stream has begun
            if '"text_delta"' in line:
                break
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=60)
    assert process.returncode == 130
    events = [RUNTIME_EVENT.validate_json(line) for line in rest.splitlines()]
    assert events[-1].kind == "run_ended" and events[-1].status == "cancelled"
    assert any(e.kind == "message_ended" and e.status == "cancelled" for e in events)
