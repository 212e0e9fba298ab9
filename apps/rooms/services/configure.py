"""A conversation's model and reasoning settings (DESIGN 2.1): which enabled model its next
runs use, and the reasoning controls that model's configuration declares (``extend_params``,
names of :class:`apps.engine.messages.ReasoningParams` fields).

A member changes them with the socket's ``configure`` frame; the change is broadcast as
``settings_changed {"model", "reasoning", "by"}`` and applies from the next run (the active
one keeps what it started with). Each run records what it used (``Run.model``,
``Run.reasoning``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from apps.accounts.models import Membership, Team
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.messages import ReasoningParams
from apps.integrations.builders import model_for_team, reasoning_params, team_models
from apps.integrations.models import ModelConfig
from apps.rooms.models import Conversation
from apps.rooms.services.access import require_writer
from apps.rooms.services.events import conversation_lock, event_append

__all__ = ["conversation_configure", "conversation_settings", "model_choices",
           "reasoning_record", "run_model"]


def model_choices(team: Team) -> list[dict[str, Any]]:
    """The models a member of ``team`` may choose (:func:`team_models`), in the admin's
    order: ``[{"id": ModelConfig pk,
    "name", "model_id", "provider": provider name, "controls": extend_params,
    "defaults": {control: default_reasoning value}}]``."""
    rows = team_models(team).select_related("provider").order_by("pk")
    return [{"id": m.pk, "name": str(m), "model_id": m.model_id, "provider": m.provider.name,
             "controls": list(m.extend_params or []),
             "defaults": {k: v for k, v in (m.default_reasoning or {}).items()
                          if k in (m.extend_params or [])}}
            for m in rows]


def run_model(conversation: Conversation, *, loaded: bool = False
              ) -> tuple[ModelConfig | None, dict[str, Any]]:
    """The model the conversation's next run uses, with the reasoning fields chosen for it:
    the member's choice while it is usable and one the team offers (:func:`team_models`),
    else the team's model with none (the choice was for another model). ``(None, {})`` when
    no model is configured at all. ``loaded``: the conversation's team was read just now with
    its choice (:func:`~apps.integrations.builders.model_for_team`)."""
    if conversation.model_id is not None:
        chosen = (team_models(conversation.room.team).filter(pk=conversation.model_id)
                  .select_related("provider").first())
        if chosen is not None:
            return chosen, dict(conversation.reasoning or {})
    return model_for_team(conversation.room.team, loaded=loaded), {}


def reasoning_record(reasoning: ReasoningParams | None) -> dict[str, Any] | None:
    """What a run records of the ReasoningParams it used: the fields set (None: none)."""
    used = reasoning.model_dump(mode="json", exclude_none=True) if reasoning else {}
    return used or None


def conversation_settings(conversation: Conversation) -> dict[str, Any]:
    """``{"model": ModelConfig pk | None, "reasoning": {field: value}}``: what the next run
    uses (the team's model until someone chooses)."""
    model, reasoning = run_model(conversation)
    return {"model": model.pk if model else None, "reasoning": reasoning}


def _checked(model: ModelConfig, reasoning: Mapping[str, Any]) -> dict[str, Any]:
    """``reasoning`` without its nulls (null: the model's default); ``invalid`` for a field
    the model does not declare or a value ReasoningParams refuses."""
    declared = model.extend_params or []
    for name in reasoning:
        if name not in declared:
            offered = ", ".join(declared) or _("none")
            raise ApplicationError(ErrorCode.INVALID, _(
                "%(model)s has no %(name)r control (its controls: %(offered)s).")
                % {"model": model, "name": name, "offered": offered})
    chosen = {k: v for k, v in reasoning.items() if v is not None}
    reasoning_params(chosen, what="reasoning", strict=True)  # stored as sent: exact types
    return chosen


def conversation_configure(*, conversation: Conversation, model: int,
                           reasoning: Mapping[str, Any], membership: Membership
                           ) -> Conversation:
    """Choose the model (a ModelConfig pk among :func:`model_choices`) and its reasoning
    controls for the conversation's next runs; broadcast as ``settings_changed`` ``{"model",
    "reasoning", "by": PERSON}`` unless nothing changed. ``invalid`` for an unknown or
    disabled model, or a control it does not declare (nothing is stored then);
    ``forbidden`` for a viewer (``membership``: the member's, of the conversation's team)."""
    require_writer(membership)
    chosen_model = team_models(conversation.room.team).filter(pk=model).first()
    if chosen_model is None:
        raise ApplicationError(ErrorCode.INVALID, _("There is no model %(model)r to choose.")
                               % {"model": model})
    chosen = _checked(chosen_model, reasoning)
    with transaction.atomic():
        conversation_lock(conversation.pk)
        changed = Conversation.objects.filter(pk=conversation.pk).exclude(
            model=chosen_model, reasoning=chosen).update(model=chosen_model, reasoning=chosen)
        if changed:
            event_append(conversation.pk, "settings_changed", {
                "kind": "settings_changed", "model": chosen_model.pk, "reasoning": chosen,
                "by": {"id": membership.user_id, "name": membership.user.shown_name}})
    conversation.model, conversation.reasoning = chosen_model, chosen
    return conversation
