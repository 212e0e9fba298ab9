"""A team's default model and tool policy: set by its owners and admins only."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from apps.accounts.models import Membership, Role, Team, User
from apps.common.errors import ApplicationError, ErrorCode
from apps.integrations.builders import model_for_team, team_models
from apps.integrations.models import ModelConfig, ProviderConfig, TeamAIConfig
from apps.integrations.services import team_set_default_model, team_set_tool_policy

pytestmark = pytest.mark.django_db


def refused(code: ErrorCode, call: Callable[[], object]) -> None:
    with pytest.raises(ApplicationError) as caught:
        call()
    assert caught.value.code is code, caught.value.message


@pytest.fixture
def other_model(provider: ProviderConfig) -> ModelConfig:
    return ModelConfig.objects.create(provider=provider, model_id="vendor-small")


def test_an_owner_chooses_the_default_model(
    acme: Team, alice: User, model: ModelConfig, other_model: ModelConfig
) -> None:
    assert model_for_team(acme) == model  # no choice yet: the first enabled model
    team_set_default_model(team=acme, model=other_model, by=alice)
    assert model_for_team(acme) == other_model
    team_set_default_model(team=acme, model=None, by=alice)
    assert model_for_team(acme) == model
    assert TeamAIConfig.objects.filter(team=acme).count() == 1


def test_an_owner_chooses_the_models_members_may_pick(
    acme: Team, globex: Team, alice: User, model: ModelConfig, other_model: ModelConfig
) -> None:
    third = ModelConfig.objects.create(provider=model.provider, model_id="vendor-medium")
    assert set(team_models(acme)) == {model, other_model, third}  # none ticked: every one
    team_set_default_model(team=acme, model=third, by=alice, chat_models=[other_model])
    assert set(team_models(acme)) == {other_model, third}  # the default is always offered
    assert set(team_models(globex)) == {model, other_model, third}  # another team's own
    ModelConfig.objects.filter(pk=other_model.pk).update(enabled=False)
    assert set(team_models(acme)) == {third}
    refused(ErrorCode.INVALID, lambda: team_set_default_model(
        team=acme, model=None, by=alice, chat_models=[other_model]))
    assert set(TeamAIConfig.objects.get(team=acme).chat_models.all()) == {other_model}
    team_set_default_model(team=acme, model=None, by=alice, chat_models=[third])
    assert set(team_models(acme)) == {model, third}  # the site's default is offered too
    team_set_default_model(team=acme, model=None, by=alice, chat_models=[])
    assert set(team_models(acme)) == {model, third}


def test_an_admin_may_choose_too(acme: Team, bob: User, model: ModelConfig) -> None:
    Membership.objects.filter(team=acme, user=bob).update(role=Role.ADMIN)
    team_set_default_model(team=acme, model=model, by=bob)
    assert TeamAIConfig.objects.get(team=acme).default_model == model


@pytest.mark.parametrize("actor", ["bob", "carol"])
def test_members_and_viewers_cannot_choose(
    acme: Team, model: ModelConfig, request: pytest.FixtureRequest, actor: str
) -> None:
    by = request.getfixturevalue(actor)
    refused(ErrorCode.FORBIDDEN, lambda: team_set_default_model(team=acme, model=model, by=by))


def test_charlie_cannot_choose_for_acme(
    acme: Team, globex: Team, charlie: User, model: ModelConfig
) -> None:
    refused(ErrorCode.NOT_FOUND,
            lambda: team_set_default_model(team=acme, model=model, by=charlie))
    assert not TeamAIConfig.objects.filter(team=acme).exists()


def test_a_disabled_model_or_provider_cannot_be_chosen(
    acme: Team, alice: User, model: ModelConfig, provider: ProviderConfig
) -> None:
    ModelConfig.objects.filter(pk=model.pk).update(enabled=False)
    refused(ErrorCode.INVALID, lambda: team_set_default_model(team=acme, model=model, by=alice))
    ModelConfig.objects.filter(pk=model.pk).update(enabled=True)
    ProviderConfig.objects.filter(pk=provider.pk).update(enabled=False)
    refused(ErrorCode.INVALID, lambda: team_set_default_model(team=acme, model=model, by=alice))


def test_an_owner_sets_the_tool_policy(acme: Team, alice: User) -> None:
    stored = team_set_tool_policy(team=acme, require=["Read"], exempt=["Write", "Write"],
                                  by=alice)
    acme.refresh_from_db()
    assert acme.tool_policy == stored == {"require": ["Read"], "exempt": ["Write"]}


def test_an_invalid_tool_policy_is_refused_and_nothing_changes(acme: Team, alice: User) -> None:
    team_set_tool_policy(team=acme, require=["Read"], exempt=[], by=alice)
    refused(ErrorCode.INVALID,
            lambda: team_set_tool_policy(team=acme, require=["Bash"], exempt=["Bash"], by=alice))
    acme.refresh_from_db()
    assert acme.tool_policy == {"require": ["Read"], "exempt": []}


@pytest.mark.parametrize("actor", ["bob", "carol"])
def test_members_and_viewers_cannot_set_the_tool_policy(
    acme: Team, request: pytest.FixtureRequest, actor: str
) -> None:
    by = request.getfixturevalue(actor)
    refused(ErrorCode.FORBIDDEN,
            lambda: team_set_tool_policy(team=acme, require=[], exempt=["Bash"], by=by))


def test_charlie_cannot_set_acmes_tool_policy(acme: Team, globex: Team, charlie: User) -> None:
    refused(ErrorCode.NOT_FOUND,
            lambda: team_set_tool_policy(team=acme, require=[], exempt=["Bash"], by=charlie))
    acme.refresh_from_db()
    assert acme.tool_policy == {}
