"""MCP elicitation through the engine seam (issue 24): server-everything's
``trigger-elicitation-request`` asks the client for a form; the port given to the McpManager
answers it, the relay emits the room's events and checks the answer before the server gets it."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest

from apps.engine.events import AwaitingElicitation, ElicitationAnswered, RuntimeEvent
from apps.engine.mcp import (
    AcceptDefaults,
    ElicitationAnswer,
    ElicitationRequest,
    McpManager,
)
from apps.engine.mcp.elicitation import ElicitationRelay, content_problem, schema_problem
from tests.unit.engine.mcp.kit import call, everything_spec

TOOL = "mcp__everything__trigger-elicitation-request"


class Answers:
    """A port that gives one scripted answer and records what it was asked."""

    def __init__(self, answer: ElicitationAnswer) -> None:
        self.answer = answer
        self.asked: list[ElicitationRequest] = []

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.asked.append(request)
        return self.answer


async def _ask_everything(port: object, tmp_path: Path) -> tuple[str, list[RuntimeEvent]]:
    events: list[RuntimeEvent] = []
    async with McpManager([everything_spec()], elicitation=port, on_event=events.append
                          ) as manager:
        output = await call(manager.registry, TOOL, tmp_path)
    text = output.content if isinstance(output.content, str) else "".join(
        getattr(b, "text", "") for b in output.content)
    return text, events


async def test_a_servers_elicitation_reaches_the_port_and_the_answer_the_server(
        tmp_path: Path) -> None:
    port = Answers(ElicitationAnswer(action="accept", answered_by="Bob", content={
        "name": "Ada Lovelace", "check": True, "integer": 7}))
    text, events = await _ask_everything(port, tmp_path)
    [asked] = port.asked
    assert (asked.server, asked.message) == ("everything",
                                             "Please provide inputs for the following fields:")
    assert asked.schema["required"] == ["name"] and asked.elicitation_id.startswith("elicit_")
    assert "- Name: Ada Lovelace" in text and "- Favorite Integer: 7" in text
    waiting, answered = events
    assert isinstance(waiting, AwaitingElicitation) and waiting.schema_ == asked.schema
    assert waiting.model_dump(mode="json")["schema"] == asked.schema
    assert answered == ElicitationAnswered(
        elicitation_id=asked.elicitation_id, action="accept", answered_by="Bob",
        content={"name": "Ada Lovelace", "check": True, "integer": 7})


async def test_content_that_does_not_fit_the_schema_never_reaches_the_server(
        tmp_path: Path) -> None:
    port = Answers(ElicitationAnswer(action="accept", answered_by="Bob",
                                     content={"name": "Ada", "integer": 1000}))  # maximum 100
    text, events = await _ask_everything(port, tmp_path)
    assert "User cancelled" in text and "1000" not in text
    assert events[-1].action == "cancel" and events[-1].content is None


async def test_accept_defaults_answers_with_each_propertys_default() -> None:
    request = ElicitationRequest(elicitation_id="e1", server="s", message="m", schema={
        "type": "object", "properties": {
            "size": {"type": "integer", "default": 3},
            "colour": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
            "note": {"type": "string"}}})
    answer = await AcceptDefaults().elicit(request)
    assert (answer.action, answer.content) == ("accept", {"size": 3, "colour": "blue"})
    assert content_problem(request.schema, answer.content) is None


@pytest.mark.parametrize(("schema", "says"), [
    ({"type": "object", "properties": {"where": {"type": "object"}}},
     "property 'where' is not a string, number, boolean or enum"),
    ({"type": "array"}, "must be an object schema"),
    ({"type": "object", "properties": {"at": {"type": "string", "format": "ipv4"}}},
     "property 'at'"),
])
async def test_a_schema_outside_the_restricted_subset_is_refused_to_the_server(
        schema: dict, says: str) -> None:
    port = Answers(ElicitationAnswer(action="decline"))
    events: list[RuntimeEvent] = []
    relay = ElicitationRelay(port, events.append)
    answer = await relay.relay("s", types.ElicitRequestFormParams(message="m",
                                                                  requested_schema=schema))
    assert isinstance(answer, types.ErrorData) and answer.code == types.INVALID_PARAMS
    assert says in answer.message and schema_problem(schema) == answer.message
    assert port.asked == [] and events == []


async def test_a_url_mode_elicitation_is_declined_without_asking_anyone() -> None:
    port = Answers(ElicitationAnswer(action="accept", content={}))
    answer = await ElicitationRelay(port).relay("s", types.ElicitRequestURLParams(
        message="sign in", url="https://example.com/", elicitation_id="u1"))
    assert answer == types.ElicitResult(action="decline") and port.asked == []
