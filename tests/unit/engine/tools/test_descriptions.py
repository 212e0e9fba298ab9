"""What the tool descriptions tell the model matches what the tools do (issue 16): every number
in a built-in tool's description is one of that tool's real limits, and the tools whose output
can be long say it is stored whole and previewed (not cut) past the executor's result limit."""

from __future__ import annotations

import re

import pytest

from apps.engine.tools import net
from apps.engine.tools.base import ToolEnvironment
from apps.engine.tools.builtin import bash, glob, grep, read, web_fetch
from apps.engine.tools.defaults import default_tools
from apps.engine.tools.results import RESULTS_DIR

RESULT_LIMIT = ToolEnvironment().max_result_chars  # what the room's host runs with

LIMITS: dict[str, set[int]] = {
    "Bash": {bash.DEFAULT_TIMEOUT_MS, bash.DEFAULT_TIMEOUT_MS // 60_000, bash.MAX_TIMEOUT_MS,
             bash.MAX_TIMEOUT_MS // 60_000, RESULT_LIMIT, bash.MAX_OUTPUT_CHARS},
    "Read": {read.DEFAULT_LIMIT, 1, read.MAX_LINE_CHARS, RESULT_LIMIT},
    "Write": {8},  # UTF-8
    "Glob": {glob.MAX_RESULTS},
    "Grep": {grep.MAX_RESULTS, grep.MAX_LINE_CHARS},
    "WebFetch": {net.MAX_REDIRECTS, net.DEFAULT_MAX_BYTES // (1024 * 1024),
                 web_fetch.DEFAULT_MAX_CHARS, RESULT_LIMIT},
    "WikiRead": {read.DEFAULT_LIMIT, 1},
}


def _numbers(text: str) -> set[int]:
    return {int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*\d|\d", text)}


@pytest.mark.parametrize("tool", list(default_tools()), ids=lambda t: t.spec.name)
def test_every_number_in_a_description_is_a_real_limit(tool) -> None:
    assert _numbers(tool.spec.description) <= LIMITS.get(tool.spec.name, set())


@pytest.mark.parametrize("name", ["Bash", "WebFetch"])
def test_long_output_is_described_as_stored_whole_and_previewed(name: str) -> None:
    description = default_tools().get(name).spec.description
    assert f"A result over {RESULT_LIMIT:,} characters is saved whole" in description
    assert RESULTS_DIR in description
    assert "30000 characters is cut" not in description


def test_bash_documents_its_timeouts_and_memory_cap() -> None:
    description = default_tools().get("Bash").spec.description
    assert f"default {bash.DEFAULT_TIMEOUT_MS} " in description
    assert f"at most {bash.MAX_TIMEOUT_MS} " in description
    assert f"Output over {bash.MAX_OUTPUT_CHARS:,} bytes keeps only its beginning" in description
