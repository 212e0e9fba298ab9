"""The conformance client command (apps.engine.mcp.conformance) against a real OAuth-protected
MCP server written with the SDK's server-side auth (tests/services/oauth_mcp.py): it signs in
after the server's 401, standing in only for the browser, and calls the server's tool with the
token; without the private-network setting the SSRF guard refuses the loopback server."""

from __future__ import annotations

import pytest

from apps.engine.mcp.conformance import example_arguments, main, run
from tests.services.oauth_mcp import oauth_mcp_server


async def test_the_driver_signs_in_after_the_401_and_calls_the_tool() -> None:
    with oauth_mcp_server() as (url, state):
        await run(url, "auth/metadata-default", {}, allow_private_network=True)
    assert len(state.issued) == 1 and len(state.clients) == 1  # one registration, one token
    assert state.resources == [url]  # RFC 8707: the token is for this server


def test_the_guard_refuses_loopback_without_the_setting(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("MCP_CONFORMANCE_SCENARIO", "auth/metadata-default")
    monkeypatch.delenv("CONFAB_ALLOW_PRIVATE_NETWORK", raising=False)
    with oauth_mcp_server() as (url, state):
        assert main([url]) == 1
    assert "could not connect" in capsys.readouterr().err and state.issued == []


def test_example_arguments_follow_the_schema() -> None:
    schema = {"type": "object", "required": ["a", "b", "name"],
              "properties": {"a": {"type": "number"}, "b": {"type": "integer", "default": 7},
                             "name": {"type": "string"}, "extra": {"type": "string"}}}
    assert example_arguments(schema) == {"a": 1, "b": 7, "name": "confab"}


@pytest.mark.parametrize("context", ["{not json", '"a string"'])
def test_a_context_that_is_not_a_json_object_is_a_usage_error(
        context: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("MCP_CONFORMANCE_CONTEXT", context)
    assert main(["http://127.0.0.1:9/mcp"]) == 2
    assert "MCP_CONFORMANCE_CONTEXT" in capsys.readouterr().err
