"""The team settings page: the default model, the agent handle and the tool policy, set by
owners and admins."""

from __future__ import annotations

import inspect

import pytest
from django.urls import reverse
from django.utils import translation

from apps.accounts.models import Membership, Role, Team
from apps.engine.tools.base import BaseTool
from apps.engine.tools.defaults import default_tools
from apps.integrations.forms import PER_CALL_RULES, builtin_tools
from apps.integrations.models import ModelConfig, TeamAIConfig

pytestmark = pytest.mark.django_db


def tools_data(**choices: str) -> dict[str, str]:
    """Every built-in tool at "default" unless chosen otherwise."""
    return {tool.name: choices.get(tool.name, "default") for tool in builtin_tools()}


def test_the_page_offers_enabled_models_only(signed_in, acme, alice, model) -> None:
    ModelConfig.objects.create(provider=model.provider, model_id="retired", enabled=False)
    page = signed_in(alice).get(reverse("integrations:team_settings", args=[acme.pk]))
    assert b"vendor-large (Vendor" in page.content and b"retired" not in page.content
    assert b"MCP servers" in page.content


def test_an_owner_chooses_the_default_model(signed_in, acme, alice, model) -> None:
    client = signed_in(alice)
    url = reverse("integrations:team_model", args=[acme.pk])
    response = client.post(url, {"model": model.pk}, follow=True)
    assert TeamAIConfig.objects.get(team=acme).default_model == model
    assert b"The default model is saved." in response.content
    assert response.context["model_form"].initial["model"] == model.pk
    client.post(url, {"model": ""})
    assert TeamAIConfig.objects.get(team=acme).default_model is None


def test_an_owner_ticks_the_models_members_may_choose(signed_in, acme, alice, model) -> None:
    small = ModelConfig.objects.create(provider=model.provider, model_id="vendor-small")
    client = signed_in(alice)
    url = reverse("integrations:team_model", args=[acme.pk])
    response = client.post(url, {"model": model.pk, "chat_models": [small.pk]}, follow=True)
    assert set(TeamAIConfig.objects.get(team=acme).chat_models.all()) == {small}
    assert response.context["model_form"].initial["chat_models"] == [small]
    assert b"Models members may choose in a conversation" in response.content
    client.post(url, {"model": model.pk})  # none ticked: every enabled model again
    assert not TeamAIConfig.objects.get(team=acme).chat_models.exists()


def test_a_disabled_model_cannot_be_chosen(signed_in, acme, alice, model) -> None:
    off = ModelConfig.objects.create(provider=model.provider, model_id="retired", enabled=False)
    response = signed_in(alice).post(reverse("integrations:team_model", args=[acme.pk]),
                                     {"model": off.pk})
    assert response.status_code == 200 and b"errorlist" in response.content
    assert not TeamAIConfig.objects.filter(team=acme).exists()


def test_an_admin_may_set_the_model_too(signed_in, acme, bob, model) -> None:
    Membership.objects.filter(team=acme, user=bob).update(role=Role.ADMIN)
    signed_in(bob).post(reverse("integrations:team_model", args=[acme.pk]), {"model": model.pk})
    assert TeamAIConfig.objects.get(team=acme).default_model == model


def test_the_tool_list_shows_each_tools_own_rule(signed_in, acme, alice) -> None:
    defaults = {tool.name: tool.default for tool in builtin_tools()}
    assert defaults["Write"] == "asks" and defaults["Read"] == "runs unasked"
    assert defaults["Bash"] == "asks for some calls"
    page = signed_in(alice).get(reverse("integrations:team_settings", args=[acme.pk]))
    assert b"Default: asks for some calls" in page.content and b"read-only" in page.content


def test_each_per_call_rule_is_the_engines_own_in_english() -> None:
    """The engine cannot import Django, so it states a per-call rule in English (the docstring
    of the tool's ``needs_approval``); the form says it in the person's language from
    ``PER_CALL_RULES``, which must say what the engine says."""
    engine = {tool.spec.name: inspect.getdoc(type(tool).needs_approval) for tool in default_tools()
              if type(tool).needs_approval is not BaseTool.needs_approval}
    with translation.override("en"):
        assert {name: str(rule) for name, rule in PER_CALL_RULES.items()} == engine


def test_the_choices_become_the_policy_lists(signed_in, acme: Team, alice) -> None:
    response = signed_in(alice).post(reverse("integrations:team_tools", args=[acme.pk]),
                                     tools_data(Read="require", Write="exempt"), follow=True)
    acme.refresh_from_db()
    assert acme.tool_policy == {"require": ["Read"], "exempt": ["Write"]}
    assert b"The tool policy is saved." in response.content
    form = response.context["tools_form"]
    assert (form["Read"].initial, form["Write"].initial, form["Bash"].initial) == (
        "require", "exempt", "default")


def test_policy_entries_for_other_tools_are_kept(signed_in, acme: Team, alice) -> None:
    acme.tool_policy = {"require": ["mcp_deploy", "Bash"], "exempt": ["mcp_lookup"]}
    acme.save()
    signed_in(alice).post(reverse("integrations:team_tools", args=[acme.pk]),
                          tools_data(Glob="require"))
    acme.refresh_from_db()
    assert acme.tool_policy == {"require": ["mcp_deploy", "Glob"], "exempt": ["mcp_lookup"]}


def test_an_incomplete_tool_form_changes_nothing(signed_in, acme: Team, alice) -> None:
    response = signed_in(alice).post(reverse("integrations:team_tools", args=[acme.pk]),
                                     {"Read": "require"})
    assert response.status_code == 200 and b"errorlist" in response.content
    acme.refresh_from_db()
    assert acme.tool_policy == {}


def test_an_owner_names_the_agent_and_the_page_shows_it(signed_in, acme: Team, alice) -> None:
    response = signed_in(alice).post(reverse("integrations:team_agent_handle", args=[acme.pk]),
                                     {"handle": "@Robo"}, follow=True)
    acme.refresh_from_db()
    assert acme.agent_handle == "Robo"
    assert b"The agent handle is saved." in response.content
    assert response.context["handle_form"].initial["handle"] == "Robo"


@pytest.mark.parametrize(("typed", "stored"), [
    ("助手", "助手"), ("＠小助手", "小助手"), ("Ассистент", "Ассистент"), ("सहायक", "सहायक"),
    ("bot_2", "bot_2"), ("Cafe\u0301", "Café"),  # kept in NFC, as mentions are compared
])
def test_a_handle_may_be_in_any_script(typed: str, stored: str, signed_in, acme: Team,
                                       alice) -> None:
    response = signed_in(alice).post(reverse("integrations:team_agent_handle", args=[acme.pk]),
                                     {"handle": typed}, follow=True)
    assert b"The agent handle is saved." in response.content
    acme.refresh_from_db()
    assert acme.agent_handle == stored


@pytest.mark.parametrize("handle", ["two words", "-dash", "x" * 31, "ro.bo", "", "助手！",
                                    "\u0301x", "a😀"])
def test_a_bad_handle_is_refused_and_the_stored_one_kept(handle: str, signed_in, acme: Team,
                                                        alice) -> None:
    response = signed_in(alice).post(reverse("integrations:team_agent_handle", args=[acme.pk]),
                                     {"handle": handle})
    assert response.status_code == 200 and b"errorlist" in response.content
    acme.refresh_from_db()
    assert acme.agent_handle == "agent"


def test_a_refused_handle_says_which_characters_it_may_have(signed_in, acme: Team,
                                                           alice) -> None:
    response = signed_in(alice).post(reverse("integrations:team_agent_handle", args=[acme.pk]),
                                     {"handle": "助手！"})
    assert "Letters (of any language), digits, _ and - only, not starting with -." in (
        response.content.decode())


def test_a_member_cannot_name_the_agent(signed_in, acme: Team, bob) -> None:
    response = signed_in(bob).post(reverse("integrations:team_agent_handle", args=[acme.pk]),
                                   {"handle": "robo"})
    assert response.status_code == 403
    acme.refresh_from_db()
    assert acme.agent_handle == "agent"
