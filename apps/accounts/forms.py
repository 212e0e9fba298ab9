"""Forms of the account and team pages: they parse input; services decide."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.core.exceptions import ValidationError

from apps.accounts.models import ApiToken, Role, Team, User
from apps.accounts.throttle import login_locked

__all__ = ["InvitationForm", "RoleForm", "SignupForm", "TeamForm", "ThrottledLoginForm",
           "TokenForm"]


class SignupForm(UserCreationForm):
    """Username, display name, email and the password twice (Django's validators)."""

    invite = forms.CharField(required=False, widget=forms.HiddenInput)

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "display_name", "email")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["email"].required = True
        self.fields["display_name"].help_text = "How the room shows you (optional)."


class ThrottledLoginForm(AuthenticationForm):
    """Django's sign-in form that says so when the throttle holds this username and address
    (the backend refuses either way; see ``apps.accounts.throttle``)."""

    invite = forms.CharField(required=False, widget=forms.HiddenInput)

    error_messages = {
        **AuthenticationForm.error_messages,
        "throttled": "Too many failed sign-ins. Wait a few minutes and try again.",
    }

    def clean(self) -> dict[str, Any]:
        """Refuse at once while locked; else Django's checks."""
        if self.request is not None and login_locked(self.request,
                                                     self.cleaned_data.get("username") or ""):
            raise ValidationError(self.error_messages["throttled"], code="throttled")
        return super().clean()


class TeamForm(forms.Form):
    """A new team's name."""

    name = forms.CharField(max_length=Team._meta.get_field("name").max_length)


class RoleForm(forms.Form):
    """A member's new role."""

    role = forms.ChoiceField(choices=Role.choices)


class InvitationForm(forms.Form):
    """An invitation link: the role it grants and, optionally, who alone may use it."""

    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)
    email = forms.EmailField(required=False,
                             help_text="Only a person with this address may use the link.")

    def __init__(self, *args: Any, roles: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = roles


class TokenForm(forms.Form):
    """A new API token's name."""

    name = forms.CharField(max_length=ApiToken._meta.get_field("name").max_length,
                           help_text="What it is for, e.g. \u201claptop script\u201d.")
