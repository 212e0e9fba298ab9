"""The tool registry: registration rules, schema validation, subsets and per-provider export;
and how the injected people's messages reach each provider after tool results."""

from __future__ import annotations

import pytest
from jsonschema.exceptions import SchemaError

from apps.engine.messages import Author, Message
from apps.engine.providers import provider_class
from apps.engine.providers.base import ProviderSettings
from apps.engine.runtime.incremental import shown_to_model
from apps.engine.tools.base import BaseTool, ToolCategory, ToolSpec
from apps.engine.tools.defaults import default_tools
from apps.engine.tools.registry import ToolRegistry

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"},
                                           "mode": {"type": ["string", "null"]}},
          "required": ["path"], "additionalProperties": False}


class Probe(BaseTool):
    spec = ToolSpec(name="Probe", description="probe", parameters=SCHEMA)


class Agentish(BaseTool):
    spec = ToolSpec(name="Agentish", description="x", parameters={"type": "object"},
                    category=ToolCategory.AGENT)


def test_a_name_is_registered_once() -> None:
    registry = ToolRegistry([Probe()])
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Probe())


def test_an_invalid_schema_is_refused_at_registration() -> None:
    class Broken(BaseTool):
        spec = ToolSpec(name="Broken", description="x", parameters={"type": "nonsense"})

    with pytest.raises(SchemaError):
        ToolRegistry([Broken()])


def test_a_broken_schema_is_refused_on_every_registration() -> None:
    # Valid schemas are checked once per process (the registry remembers them); a broken one
    # must never be remembered, also next to a valid one of the same shape.
    class Valid(BaseTool):
        spec = ToolSpec(name="Valid", description="x",
                        parameters={"type": "object", "properties": {"n": {"type": "integer"}}})

    class Broken(BaseTool):
        spec = ToolSpec(name="Broken", description="x",
                        parameters={"type": "object", "properties": {"n": {"type": 7}}})

    for _ in range(2):
        assert "Valid" in ToolRegistry([Valid()])
        with pytest.raises(SchemaError):
            ToolRegistry([Broken()])


def test_runs_share_one_compiled_validator_per_schema_and_a_changed_schema_gets_its_own(
) -> None:
    # Every run registers the same tools: the validator is compiled once per process.
    def tool(bound: int) -> BaseTool:
        class Counted(BaseTool):
            spec = ToolSpec(name="Counted", description="x", parameters={
                "type": "object", "properties": {"n": {"type": "integer", "maximum": bound}}})
        return Counted()

    first, second = ToolRegistry([tool(5)]), ToolRegistry([tool(5)])
    assert first._validators["Counted"] is second._validators["Counted"]
    changed = ToolRegistry([tool(1)])
    assert changed._validators["Counted"] is not first._validators["Counted"]
    assert first.validate("Counted", {"n": 3}) is None
    assert "maximum" in (changed.validate("Counted", {"n": 3}) or "")


def test_validation_explains_every_problem() -> None:
    registry = ToolRegistry([Probe()])
    assert registry.validate("Probe", {"path": "a"}) is None
    problem = registry.validate("Probe", {"path": 1, "other": True})
    assert problem is not None and problem.startswith("Invalid arguments for tool 'Probe'")
    assert "arguments['path']: 1 is not of type 'string'" in problem
    assert "'other' was unexpected" in problem


def test_subset_by_name_and_category() -> None:
    registry = ToolRegistry([Probe(), Agentish()])
    assert [t.spec.name for t in registry.subset(names=["Probe"])] == ["Probe"]
    assert "Agentish" not in registry.subset(exclude_categories=[ToolCategory.AGENT])


def test_export_writes_each_provider_form() -> None:
    registry = ToolRegistry([Probe()])
    [anthropic] = registry.export("anthropic")
    assert anthropic["name"] == "Probe" and anthropic["input_schema"] == SCHEMA
    [openai] = registry.export("openai")
    assert openai == {"type": "function", "function": {"name": "Probe", "description": "probe",
                                                       "parameters": SCHEMA}}
    [gemini] = registry.export("gemini")
    assert gemini["parameters"] == {"type": "object", "properties": {
        "path": {"type": "string"}, "mode": {"type": "string", "nullable": True}},
        "required": ["path"]}
    with pytest.raises(ValueError, match="unknown provider protocol"):
        registry.export("cohere")


@pytest.mark.parametrize("protocol", ["anthropic", "openai", "gemini"])
def test_every_built_in_tool_exports_for_every_provider(protocol: str) -> None:
    exported = default_tools().export(protocol)
    assert len(exported) == len(default_tools()) >= 10


def steered_history() -> list[Message]:
    people = [Message(role="user", content=text, author=Author(id=n, name=n))
              for n, text in (("alice", "first"), ("bob", "second"))]
    return [
        Message(role="user", content="go", author=Author(id="carol", name="carol")),
        Message(role="assistant", provider="anthropic", content=[
            {"type": "tool_use", "id": "c1", "name": "Echo", "input": {}}]),
        Message(role="tool", content=[{"type": "tool_result", "tool_use_id": "c1",
                                       "name": "Echo", "content": "ok"}]),
        *people,
    ]


def body(protocol: str) -> dict:
    provider = provider_class(protocol)(ProviderSettings(protocol=protocol,
                                                         base_url="http://127.0.0.1:1"))
    from apps.engine.messages import ChatRequest

    messages = [shown_to_model(m) for m in steered_history()]
    return provider.build_call(ChatRequest(model="m", messages=messages)).body


def test_anthropic_gets_tool_results_then_each_persons_text_in_one_user_turn() -> None:
    last = body("anthropic")["messages"][-1]
    assert last["role"] == "user"
    kinds = [(b["type"], b.get("text")) for b in last["content"]]
    assert kinds == [("tool_result", None), ("text", "[alice]"), ("text", "first"),
                     ("text", "[bob]"), ("text", "second")]


def test_gemini_gets_the_responses_then_the_texts_in_one_user_content() -> None:
    contents = body("gemini")["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    parts = contents[-1]["parts"]
    assert "functionResponse" in parts[0]
    assert [p.get("text") for p in parts[1:]] == ["[alice]", "first", "[bob]", "second"]


def test_openai_gets_the_tool_message_then_the_people_in_order() -> None:
    messages = body("openai")["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user", "user"]
    assert "alice" in str(messages[3]["content"]) and "bob" in str(messages[4]["content"])


def test_a_tool_removed_meanwhile_is_a_message_not_a_crash() -> None:
    registry = ToolRegistry([Probe()])
    registry.unregister("Probe")
    assert registry.validate("Probe", {"path": "a"}) == (
        "The tool 'Probe' is no longer available; choose another.")
