"""A team's MCP server in a real browser (issue 24), server-everything: its question
(elicitation) becomes a form built from its schema (text, checkbox, number, selects), a wrong
value is refused by the server and the form stays, the answer reaches the server, and after a
reload the open question is still there; a resource attached in the composer goes with the
message; a prompt is a slash command (a CJK server name too) whose arguments are asked inline."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import script
from tests.services.django_proc import last_json, run_script
from tests.services.mcp_servers import everything_command

pytestmark = pytest.mark.e2e
DOC = "demo://resource/static/document/features.md"
ASK = {"tool_call": {"name": "mcp__everything__trigger-elicitation-request", "arguments": {}}}


@pytest.fixture
def conversation(confab_server: ConfabServer, request: pytest.FixtureRequest) -> int:
    return confab_server.new_conversation(request.node.name)


@contextmanager
def team_server(confab_server: ConfabServer, name: str) -> Iterator[int]:
    """server-everything as the demo team's server ``name`` (removed afterwards, so other
    tests never meet it)."""
    command, args, read_paths = everything_command()
    code = (
        "import json\n"
        "from apps.integrations.models import McpServerConfig\n"
        f"server = McpServerConfig.objects.create(team_id={confab_server.demo['team']['id']},"
        f" name={name!r}, transport='stdio', command={command!r}, args={list(args)!r},"
        f" read_paths={list(read_paths)!r})\n"
        "print(json.dumps({'id': server.pk}))\n")
    server_id = last_json(run_script(code, confab_server.env))["id"]
    try:
        yield server_id
    finally:
        run_script("from apps.integrations.models import McpServerConfig\n"
                   f"McpServerConfig.objects.filter(pk={server_id}).delete()\n",
                   confab_server.env)


@pytest.fixture
def everything(confab_server: ConfabServer) -> Iterator[int]:
    with team_server(confab_server, "everything") as server_id:
        yield server_id


def test_a_member_answers_an_mcp_servers_question_in_a_form_built_from_its_schema(
        people: People, conversation: int, everything: int) -> None:
    alice = people.room("alice", conversation)
    alice.send(script(ASK, {"text": "the server has its answer"}))
    card = alice.page.locator("#elicitations .elicitation-card")
    expect(card).to_contain_text("The MCP server “everything” asks:")
    expect(card).to_contain_text("Please provide inputs for the following fields:")
    name = card.locator('.elicit-field[data-name="name"] input')
    expect(name).to_be_visible()
    expect(card.locator('.elicit-field[data-name="firstLine"] input')).to_have_value(
        "It was a dark and stormy night.")
    expect(card.locator('.elicit-field[data-name="untitledSingleSelectEnum"] select')
           ).to_have_value("Monica")
    alice.reload()  # the open question is in the state frame
    card = alice.page.locator("#elicitations .elicitation-card")
    name = card.locator('.elicit-field[data-name="name"] input')
    name.fill("Ada Lovelace")
    card.locator('.elicit-field[data-name="check"] input').check()
    card.locator('.elicit-field[data-name="integer"] input').fill("1000")  # maximum 100
    card.locator('button[data-action="elicit-accept"]').click()
    expect(alice.page.locator(".notice")).to_contain_text("1000 is greater than")
    expect(name).to_be_enabled()
    card.locator('.elicit-field[data-name="integer"] input').fill("7")
    card.locator('button[data-action="elicit-accept"]').click()
    expect(card.locator(".answered-by")).to_have_text("Answered by Alice")
    expect(alice.assistant_bodies().last).to_contain_text("the server has its answer")
    result = alice.tool_cards().filter(has_text="trigger-elicitation-request")
    expect(result).to_contain_text("Name: Ada Lovelace")


def test_a_resource_attached_in_the_composer_goes_with_the_message(
        people: People, conversation: int, everything: int) -> None:
    alice = people.room("alice", conversation)
    composer = alice.page.locator("#composer")
    composer.locator("details.attach-resource summary").click()
    composer.locator('select[name="attach-server"]').select_option("everything")
    composer.locator('input[name="attach-uri"]').fill("demo://resource/static/document/nope.md")
    composer.locator('button[data-action="attach-add"]').click()
    chip = composer.locator("#composer-resources .attachment-chip")  # not the images' list
    expect(chip).to_contain_text("everything: demo://resource/static/document/nope.md")
    alice.send("never sent")
    expect(composer.locator("#composer-status")).to_contain_text("Not sent:")
    expect(chip).to_have_count(1)  # the refused message keeps its attachment
    expect(composer.locator("#composer-attachments > *")).to_have_count(0)
    chip.locator('button[data-action="attach-remove"]').click()
    expect(chip).to_have_count(0)
    composer.locator('input[name="attach-uri"]').fill(DOC)
    composer.locator('button[data-action="attach-add"]').click()
    alice.send("What does this document say?")
    expect(alice.run_status).to_have_text("Completed")
    expect(alice.messages("user").filter(has_text="What does this document say?")
           ).to_contain_text(
        "[attached from the MCP server 'everything']")
    expect(chip).to_have_count(0)


def test_a_servers_prompt_is_a_slash_command_with_its_arguments_asked_inline(
        confab_server: ConfabServer, people: People, conversation: int) -> None:
    with team_server(confab_server, "资料"):
        alice = people.room("alice", conversation)
        alice.textarea.fill("/资")
        menu = alice.page.locator("#prompt-menu")
        pick = menu.locator('button[data-action="prompt-pick"]', has_text="/资料:args-prompt")
        expect(pick).to_be_visible()
        expect(menu).to_contain_text("/资料:simple-prompt")
        pick.click()
        expect(alice.textarea).to_have_value("/资料:args-prompt")
        args = alice.page.locator("#prompt-args")
        alice.composer.locator('button[data-action="send"]').click()
        expect(alice.page.locator("#composer-status")).to_have_text(
            "Not sent: /资料:args-prompt needs city.")
        args.locator('input[name="city"]').fill("京都")
        alice.composer.locator('button[data-action="send"]').click()
        expect(alice.textarea).to_have_value("")
        sent = alice.messages("user").filter(has_text="/资料:args-prompt")
        expect(sent).to_contain_text("What's weather in 京都?")
        expect(alice.run_status).to_have_text("Completed")
