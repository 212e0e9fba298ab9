"""Personal API tokens: create (the token is shown once), list by prefix, revoke."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.forms import TokenForm
from apps.accounts.selectors import tokens_of
from apps.accounts.services import api_token_create, api_token_revoke
from apps.common.errors import ApplicationError
from apps.common.web import refusal

__all__ = ["token_revoke", "tokens"]


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    """The user's tokens; a POST creates one and shows it in full, this once."""
    form = TokenForm(request.POST or None)
    raw = None
    if request.method == "POST" and form.is_valid():
        try:
            _token, raw = api_token_create(user=request.user, name=form.cleaned_data["name"])
        except ApplicationError as error:
            form.add_error("name", error.message)
        else:
            form = TokenForm()
    return render(request, "accounts/tokens.html",
                  {"form": form, "tokens": tokens_of(request.user), "new_token": raw})


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """Revoke one of the user's tokens (anyone else's answers 404)."""
    try:
        token = api_token_revoke(user=request.user, token_id=token_id)
    except ApplicationError as error:
        refusal(request, error)
    else:
        messages.success(request, _("The token %(prefix)s… is revoked.")
                         % {"prefix": token.prefix})
    return redirect("accounts:tokens")
