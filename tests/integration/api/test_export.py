"""Transcript export: full fidelity as JSON, readable as Markdown, streamed in constant memory."""

from __future__ import annotations

import json
import tracemalloc
from datetime import datetime

import pytest

from apps.api.schemas import TranscriptOut
from apps.api.transcript import CHUNK_ROWS
from apps.common.downloads import title_filename
from apps.engine.messages import Message as EngineMessage
from apps.engine.messages import (
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from apps.rooms.models import Message, MessageStatus, Run, RunStatus, ToolDecision
from apps.rooms.services.events import event_append
from apps.rooms.transcript import message_fields
from tests.integration.api.streams import body, drain

pytestmark = pytest.mark.django_db

USAGE = {"input_tokens": 120, "output_tokens": 30, "cached_input_tokens": 100}
TOOL_OUTPUT = "# Notes\n```py\nprint(1)\n```"


def _store(conversation, message: EngineMessage, **columns) -> Message:
    return Message.objects.create(conversation=conversation,
                                  **{**message_fields(message), **columns})


@pytest.fixture
def transcript(conversation, alice, bob):
    """A run alice started and bob stopped: her question, a signed thinking block, a tool call,
    its result, a denied call, a cancelled answer, and bob's message still pending."""
    run = Run.objects.create(conversation=conversation, status=RunStatus.CANCELLED,
                             started_by=alice, stopped_by=bob, model="claude-x")
    ToolDecision.objects.create(run=run, tool_call_id="toolu_2", tool_name="Bash",
                                approved=False, decided_by=bob)
    user = {"author": alice, "author_name": "Alice"}
    _store(conversation, EngineMessage(role="user", content="Please read `notes.md`."),
           position=1, run=run, client_id="c-1", **user)
    _store(conversation, EngineMessage(role="assistant", provider="anthropic", model="claude-x",
                                       content=[
        ThinkingBlock(thinking="The user wants the notes.\nRead them first.",
                      signature="sig-abc=="),
        TextBlock(text="Reading it."),
        ToolUseBlock(id="toolu_1", name="Read", input={"path": "notes.md"}),
    ]), position=2, run=run, usage=USAGE, engine_id="m-2")
    _store(conversation, EngineMessage(role="tool", content=[
        ToolResultBlock(tool_use_id="toolu_1", name="Read", content=TOOL_OUTPUT),
        ToolResultBlock(tool_use_id="toolu_2", name="Bash", content=[TextBlock(text="denied")],
                        is_error=True),
    ]), position=3, run=run)
    _store(conversation, EngineMessage(role="assistant", status="cancelled", content=[
        RedactedThinkingBlock(data="opaque=="), TextBlock(text="Done so f"),
    ]), position=4, run=run)
    _store(conversation, EngineMessage(role="user", content="Also check todo.md"),
           status=MessageStatus.PENDING, client_id="c-2", author=bob, author_name="Bob")
    return run


def _export(client, conversation, kind: str):
    return client.get(f"/api/conversations/{conversation.pk}/export.{kind}")


@pytest.mark.parametrize("kind", ["json", "md"])
def test_an_export_downloads_under_its_chinese_title(token_client, alice, conversation,
                                                     kind) -> None:
    conversation.title = "部署计划：第二阶段/回滚"
    conversation.save()
    response = _export(token_client(alice), conversation, kind)
    # RFC 6266 4.3: the UTF-8 name in filename* (RFC 5987/8187), an ASCII one before it
    assert response["Content-Disposition"] == (
        f'attachment; filename="conversation-{conversation.pk}.{kind}"; '
        "filename*=UTF-8''%E9%83%A8%E7%BD%B2%E8%AE%A1%E5%88%92%EF%BC%9A%E7%AC%AC%E4%BA%8C"
        f"%E9%98%B6%E6%AE%B5-%E5%9B%9E%E6%BB%9A.{kind}")


@pytest.mark.parametrize(("title", "name"), [
    ("Plans", "Plans.md"),
    ("部署计划：第二阶段/回滚", "部署计划：第二阶段-回滚.md"),  # a slash would be a folder
    ('a\\b:c*d?"e"<f>|g', "a-b-c-d-e-f-g.md"),  # what Windows refuses
    ("  ..周报\t\u200b第 3 周..  ", "周报 第 3 周.md"),  # ends trimmed, format characters dropped
    ("...", "conversation-7.md"),
    ("long " * 60, ("long " * 24).strip() + ".md"),  # 120 characters at most
    ("长" * 120, "长" * 79 + ".md"),  # 3 bytes each: 237 + ".md" fit in 240 bytes
    ("a" + "长" * 120, "a" + "长" * 78 + ".md"),  # a character cut in two is dropped
    ("𠮷" * 70, "𠮷" * 59 + ".md"),  # 4 bytes each
])
def test_a_title_becomes_a_safe_file_name(title, name) -> None:
    assert title_filename(title, "md", fallback="conversation-7") == name
    assert len(name.encode()) <= 240 < 255  # what ext4 and most file systems take


def test_a_long_chinese_title_keeps_its_extension_within_the_byte_limit() -> None:
    name = title_filename("部署计划" * 40, "json", fallback="conversation-7")
    assert name.endswith(".json") and len(name.encode()) <= 240


def test_json_export_keeps_everything(token_client, alice, bob, conversation, transcript):
    response = _export(token_client(bob), conversation, "json")
    assert response.streaming and response.is_async
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == 'attachment; filename="Plans.json"'

    doc = json.loads(body(response))
    TranscriptOut.model_validate(doc)  # the documented schema is what is sent
    assert doc["format"] == "confab.transcript" and doc["version"] == 1
    assert doc["conversation"]["title"] == "Plans"
    assert doc["conversation"]["team"]["name"] == "Acme"
    assert doc["conversation"]["created_by"] == {"id": alice.pk, "name": "Alice"}

    question, answer, results, cancelled, pending = doc["messages"]
    assert [m["position"] for m in doc["messages"]] == [1, 2, 3, 4, None]
    assert question["author"] == {"id": alice.pk, "name": "Alice"}
    assert question["client_id"] == "c-1" and question["run_id"] == transcript.pk
    assert answer["content"] == [
        {"type": "thinking", "thinking": "The user wants the notes.\nRead them first.",
         "signature": "sig-abc=="},
        {"type": "text", "text": "Reading it."},
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "notes.md"}},
    ]
    assert (answer["provider"], answer["model"], answer["usage"]) == (
        "anthropic", "claude-x", USAGE)
    assert results["role"] == "tool"
    assert results["content"][0]["content"] == TOOL_OUTPUT
    assert results["content"][1]["is_error"] is True
    assert cancelled["status"] == "cancelled"
    assert cancelled["content"][0] == {"type": "redacted_thinking", "data": "opaque=="}
    assert pending["status"] == "pending"
    assert pending["author"] == {"id": bob.pk, "name": "Bob"}
    assert datetime.fromisoformat(pending["created_at"]) >= datetime.fromisoformat(
        question["created_at"])

    (run,) = doc["runs"]
    assert run["status"] == "cancelled"
    assert run["started_by"]["name"] == "Alice" and run["stopped_by"]["name"] == "Bob"
    assert run["decisions"] == [{
        "tool_call_id": "toolu_2", "tool_name": "Bash", "approved": False,
        "decided_by": {"id": bob.pk, "name": "Bob"},
        "decided_at": run["decisions"][0]["decided_at"],
    }]


def test_markdown_export_reads_like_the_conversation(token_client, carol, conversation,
                                                     transcript):
    response = _export(token_client(carol), conversation, "md")
    assert response.streaming and response.is_async
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    text = body(response)

    assert text.startswith("# Plans\n\nTeam Acme · room General")
    assert "### Alice · " in text and "Please read `notes.md`." in text
    assert ("<details>\n<summary>Thinking</summary>\n\n"
            "> The user wants the notes.\n> Read them first.\n\n</details>") in text
    assert ('**Tool call** `Read` · `toolu_1`\n\n```json\n{\n  "path": "notes.md"\n}\n```'
            in text)
    # The result holds a ``` fence, so its own fence is longer.
    assert f"**Tool result** `Read` · `toolu_1`\n\n````\n{TOOL_OUTPUT}\n````" in text
    assert "**Tool error** `Bash` · `toolu_2`\n\n```\ndenied\n```" in text
    assert "*Tokens: 120 in · 30 out · 100 cached*" in text
    assert "### Assistant (claude-x) · " in text and " · *cancelled*" in text
    assert "*Thinking redacted by the provider.*" in text
    assert "### Bob · " in text and " · *pending*" in text
    assert "## Runs" in text and "stopped by Bob" in text and "`Bash` denied by Bob" in text
    assert "sig-abc" not in text and "opaque==" not in text  # opaque artefacts stay in JSON
    assert text.index("### Alice") < text.index("Reading it.") < text.index("### Bob")


def test_markdown_thinking_cannot_break_out_of_its_block(token_client, alice, conversation):
    _store(conversation, EngineMessage(role="assistant", content=[
        ThinkingBlock(thinking="</details><script>x</script>")]), position=1)
    text = body(_export(token_client(alice), conversation, "md"))
    assert "> &lt;/details>&lt;script>x&lt;/script>" in text
    assert text.count("</details>") == 1


def test_export_of_an_empty_conversation(token_client, alice, conversation):
    doc = json.loads(body(_export(token_client(alice), conversation, "json")))
    assert (doc["messages"], doc["runs"]) == ([], [])
    assert body(_export(token_client(alice), conversation, "md")).startswith("# Plans")


def _fill(conversation, start: int, stop: int, text: str) -> None:
    """Assistant messages of ``text`` at positions ``start + 1`` to ``stop``, in batches."""
    content = [{"type": "text", "text": text}]
    for first in range(start, stop, 2000):
        Message.objects.bulk_create(
            Message(conversation=conversation, role="assistant", content=content,
                    position=position + 1)
            for position in range(first, min(first + 2000, stop)))


def _measured_export(client, conversation, kind: str) -> tuple[int, int, int]:
    """Export while tracing allocations: (bytes sent, chunks sent, peak bytes allocated)."""
    sent = [0, 0]

    def sink(chunk: bytes) -> None:
        sent[0] += len(chunk)
        sent[1] += 1

    tracemalloc.start()
    try:
        drain(_export(client, conversation, kind), sink)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return sent[0], sent[1], peak


@pytest.mark.parametrize("kind", ["json", "md"])
def test_a_long_export_streams_in_constant_memory(token_client, alice, conversation, kind):
    """20,000 messages of 1 KB: the peak stays a small fraction of the export's size, and no
    higher than for a quarter of them (memory does not grow with the conversation)."""
    text = "x" * 1000
    client = token_client(alice)
    _fill(conversation, 0, 5_000, text)
    small_size, _chunks, small_peak = _measured_export(client, conversation, kind)
    _fill(conversation, 5_000, 20_000, text)
    size, chunks, peak = _measured_export(client, conversation, kind)

    assert size > 20_000 * len(text) > 4 * CHUNK_ROWS * len(text)
    assert chunks >= size // (128 * 1024)  # handed to the server piece by piece
    assert peak < size // 5, f"peak {peak} bytes for a {size}-byte export"
    assert peak < small_peak * 1.5, f"peak {peak} for 20k messages, {small_peak} for 5k"


@pytest.mark.parametrize("kind", ["json", "md"])
def test_an_answer_still_being_written_is_exported_as_said_so_far(token_client, alice,
                                                                  conversation, kind):
    """Its row holds the last checkpoint; the rest is read from the log (a query the streamed
    export makes in a thread: on the event loop Django refuses it and the body was cut)."""
    run = Run.objects.create(conversation=conversation, status=RunStatus.RUNNING)
    Message.objects.create(conversation=conversation, run=run, role="assistant",
                           engine_id="m-live", status=MessageStatus.STREAMING, checkpoint_seq=0,
                           content=[{"type": "text", "text": "Checkpointed,"}])
    event_append(conversation.pk, "text_delta", {"kind": "text_delta", "message_id": "m-live",
                                                 "text": " and after it."}, run_id=run.pk)
    exported = body(_export(token_client(alice), conversation, kind))
    if kind == "json":
        [message] = json.loads(exported)["messages"]
        assert message["content"] == [{"type": "text", "text": "Checkpointed, and after it."}]
    else:
        assert "Checkpointed, and after it." in exported
