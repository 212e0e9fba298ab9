"""Forms of the account and team pages: they parse input; services decide."""

from __future__ import annotations

from typing import Any, Literal

from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm, UserCreationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils import translation
from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import ApiToken, Role, Team, User
from apps.accounts.throttle import THROTTLED, attempt_allowed, login_locked
from apps.accounts.time_zones import time_zone_choices

__all__ = ["InvitationForm", "LanguageForm", "RoleForm", "SignupForm", "TeamForm",
           "ThrottledLoginForm", "ThrottledPasswordResetForm", "TimeZoneForm", "TokenForm"]


def _throttle(form: forms.Form, request: HttpRequest | None,
              action: Literal["signup", "password_reset"], message: str | Promise) -> None:
    """Count this submission of ``form``; refuse it (code ``throttled``) past the limit."""
    email = str(form.data.get("email", ""))
    if request is not None and not attempt_allowed(request, action, email):
        raise ValidationError(_throttled(message), code="throttled")


def _throttled(refused: str | Promise) -> str:
    """What was refused, then :data:`THROTTLED`, in the active language (Chinese puts no space
    between two sentences)."""
    return gettext("%(refused)s %(wait)s") % {"refused": refused, "wait": THROTTLED}


class SignupForm(UserCreationForm):
    """Username, display name, email and the password twice (Django's validators); throttled
    per email address and per client (``apps.accounts.throttle``)."""

    invite = forms.CharField(required=False, widget=forms.HiddenInput)

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "display_name", "email")

    def __init__(self, *args: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request = request
        self.fields["email"].required = True
        self.fields["display_name"].help_text = _("How the room shows you (optional).")

    def clean(self) -> dict[str, Any]:
        """Refuse at once past the throttle's limit; else Django's checks."""
        _throttle(self, self.request, "signup",
                  _("Too many sign-ups from here or for this address."))
        return super().clean()


class ThrottledPasswordResetForm(PasswordResetForm):
    """Django's reset form (the same answer whether the address has an account), throttled
    per email address and per client: past the limit it sends no mail. The mail speaks its
    account's language."""

    def __init__(self, *args: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request = request

    def clean(self) -> dict[str, Any]:
        """Refuse at once past the throttle's limit."""
        _throttle(self, self.request, "password_reset", _("Too many password reset requests."))
        return super().clean()

    def send_mail(self, subject_template_name: str, email_template_name: str,
                  context: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        """Each mail in its account's language (the profile's choice), else the requester's:
        whoever asked, the owner of the address reads it."""
        language = context["user"].language or translation.get_language()
        with translation.override(language):
            super().send_mail(subject_template_name, email_template_name, context,
                              *args, **kwargs)


class ThrottledLoginForm(AuthenticationForm):
    """Django's sign-in form that says so when the throttle holds this username and address
    (the backend refuses either way; see ``apps.accounts.throttle``)."""

    invite = forms.CharField(required=False, widget=forms.HiddenInput)

    error_messages = {
        **AuthenticationForm.error_messages,
        "throttled": _("Too many failed sign-ins."),
    }

    def clean(self) -> dict[str, Any]:
        """Refuse at once while locked; else Django's checks."""
        if self.request is not None and login_locked(self.request,
                                                     self.cleaned_data.get("username") or ""):
            raise ValidationError(_throttled(self.error_messages["throttled"]), code="throttled")
        return super().clean()


class LanguageForm(forms.Form):
    """The interface language: one of ``settings.LANGUAGES``, or "" (the browser's choice);
    ``next``: where to go back to."""

    language = forms.ChoiceField(
        required=False, label=_("Language"),
        choices=[("", _("The browser's language")), *settings.LANGUAGES])
    next = forms.CharField(required=False, widget=forms.HiddenInput)


class TimeZoneForm(forms.Form):
    """The time zone the person's dates are shown in: an IANA name, or "" (the site's)."""

    time_zone = forms.ChoiceField(
        required=False, label=_("Time zone"),
        choices=lambda: [("", _("The site's time zone")), *time_zone_choices()])


class TeamForm(forms.Form):
    """A new team's name."""

    name = forms.CharField(max_length=Team._meta.get_field("name").max_length, label=_("Name"))


class RoleForm(forms.Form):
    """A member's new role."""

    role = forms.ChoiceField(choices=Role.choices, label=_("Role"))


class InvitationForm(forms.Form):
    """An invitation link: the role it grants and, optionally, who alone may use it."""

    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER, label=_("Role"))
    email = forms.EmailField(required=False, label=_("Email"),
                             help_text=_("Only a person with this address may use the link."))

    def __init__(self, *args: Any, roles: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = roles


class TokenForm(forms.Form):
    """A new API token's name."""

    name = forms.CharField(max_length=ApiToken._meta.get_field("name").max_length, label=_("Name"),
                           help_text=_("What it is for, e.g. “laptop script”."))
