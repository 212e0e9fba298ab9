"""The tool policy's meaning (needs_approval) and what may be stored (clean_tool_policy)."""

from __future__ import annotations

import pytest

from apps.common.errors import ApplicationError, ErrorCode
from apps.integrations.policy import MAX_NAMES, clean_tool_policy, needs_approval

POLICY = {"require": ["Read", "mcp__github__create_issue"], "exempt": ["Write", "Bash"]}


@pytest.mark.parametrize(("tool", "default", "expected"), [
    ("Read", False, True),    # require forces approval on a tool that needs none by default
    ("Read", True, True),
    ("Write", True, False),   # exempt lifts the tool's own approval
    ("Bash", True, False),    # ... for every command, read-only or not: the team chose it
    ("Bash", False, False),
    ("Edit", True, True),     # in neither list: the tool's default
    ("Grep", False, False),
    ("mcp__github__create_issue", False, True),
    ("read", False, False),   # names are exact and case-sensitive
])
def test_require_forces_exempt_lifts_and_the_rest_keep_their_default(
    tool: str, default: bool, expected: bool
) -> None:
    assert needs_approval(POLICY, tool, default) is expected


@pytest.mark.parametrize("policy", [None, {}, {"require": "Bash"}, ["Bash"], {"exempt": None}])
def test_an_empty_or_malformed_policy_keeps_the_defaults(policy: object) -> None:
    assert needs_approval(policy, "Bash", True) is True  # type: ignore[arg-type]
    assert needs_approval(policy, "Read", False) is False  # type: ignore[arg-type]


def test_require_wins_when_a_stored_policy_names_a_tool_twice() -> None:
    assert needs_approval({"require": ["Bash"], "exempt": ["Bash"]}, "Bash", False) is True


def test_names_are_stripped_and_deduplicated_in_order() -> None:
    assert clean_tool_policy(require=[" Write", "Bash", "Write"], exempt=("mcp__x__y",)) == {
        "require": ["Write", "Bash"], "exempt": ["mcp__x__y"]}


def test_unknown_names_are_accepted_for_mcp_tools() -> None:
    assert clean_tool_policy(require=["mcp__jira__delete_ticket"], exempt=[])["require"] == [
        "mcp__jira__delete_ticket"]


@pytest.mark.parametrize(("require", "exempt", "words"), [
    (["Bash"], ["Bash"], "both required and exempt"),
    ([1], [], "not a tool name"),
    ([None], [], "not a tool name"),
    (["has space"], [], "not a tool name"),
    ([""], [], "not a tool name"),
    (["x" * 129], [], "not a tool name"),
    ("Bash", [], "list of tool names"),
    ([], None, "list of tool names"),
    ([f"t{i}" for i in range(MAX_NAMES + 1)], [], "more than"),
])
def test_bad_policies_are_invalid(require: object, exempt: object, words: str) -> None:
    with pytest.raises(ApplicationError) as caught:
        clean_tool_policy(require=require, exempt=exempt)  # type: ignore[arg-type]
    assert caught.value.code is ErrorCode.INVALID
    assert words in caught.value.message
