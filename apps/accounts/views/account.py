"""The account page: change the password, sign out everywhere.

Both end sessions, and with them the person's open sockets (``credentials_changed``): a new
password ends every session but this one (Django's ``update_session_auth_hash`` keeps it);
signing out everywhere ends this one too. API tokens are not sessions and stay until revoked.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import logout, update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.services import user_sign_out_everywhere

__all__ = ["account", "sign_out_everywhere"]


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def account(request: HttpRequest) -> HttpResponse:
    """The page; a POST changes the password (the old one, then the new one twice)."""
    form = PasswordChangeForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        update_session_auth_hash(request, form.save())
        messages.success(request, "Your password is changed. Every other session is signed "
                                  "out, and its open rooms and pages are disconnected.")
        return redirect("accounts:account")
    return render(request, "accounts/account.html", {"form": form})


@login_required
@require_POST
def sign_out_everywhere(request: HttpRequest) -> HttpResponse:
    """End every session of the person, this one included."""
    user_sign_out_everywhere(user=request.user)
    logout(request)
    messages.success(request, "You are signed out everywhere: every browser, and every open "
                              "room and page. Your API tokens still work until you revoke them.")
    return redirect("accounts:login")
