"""The room pages' forms: input validation only; the services decide the rest."""

from __future__ import annotations

from django import forms

from apps.rooms.names import CONVERSATION_TITLE_MAX, ROOM_NAME_MAX


class RoomCreateForm(forms.Form):
    """A new room in team ``team_id``."""

    team_id = forms.IntegerField(min_value=1)
    name = forms.CharField(max_length=ROOM_NAME_MAX, strip=True)


class ConversationCreateForm(forms.Form):
    """A new conversation; an empty title becomes "New conversation"."""

    title = forms.CharField(max_length=CONVERSATION_TITLE_MAX, strip=True, required=False)

    def clean_title(self) -> str:
        return self.cleaned_data["title"] or "New conversation"
