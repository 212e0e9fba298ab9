"""The account page: change the password, sign out everywhere; the interface language.

Both end sessions, and with them the person's open sockets (``credentials_changed``): a new
password ends every session but this one (Django's ``update_session_auth_hash`` keeps it);
signing out everywhere ends this one too. API tokens are not sessions and stay until revoked.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout, update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.forms import LanguageForm, TimeZoneForm
from apps.accounts.services import (
    user_set_language,
    user_set_time_zone,
    user_sign_out_everywhere,
)
from apps.common.errors import ApplicationError, ErrorCode

__all__ = ["account", "language", "sign_out_everywhere", "time_zone"]


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def account(request: HttpRequest) -> HttpResponse:
    """The page; a POST changes the password (the old one, then the new one twice)."""
    form = PasswordChangeForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        update_session_auth_hash(request, form.save())
        messages.success(request, _("Your password is changed. Every other session is signed "
                                    "out, and its open rooms and pages are disconnected."))
        return redirect("accounts:account")
    language_form = LanguageForm(initial={"language": request.user.language,
                                          "next": request.path})
    time_zone_form = TimeZoneForm(initial={"time_zone": request.user.time_zone})
    return render(request, "accounts/account.html", {"form": form,
                                                     "language_form": language_form,
                                                     "time_zone_form": time_zone_form})


@login_required
@require_POST
def time_zone(request: HttpRequest) -> HttpResponse:
    """Keep the person's time zone (the account page's choice); back to the account page,
    with the refusal as a message when the zone is not one of the tz database's."""
    form = TimeZoneForm(request.POST)
    try:
        if not form.is_valid():
            raise ApplicationError(ErrorCode.INVALID, form.errors.as_text())
        user_set_time_zone(user=request.user, time_zone=form.cleaned_data["time_zone"])
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, _("Time zone saved: dates are shown in it from now on."))
    return redirect("accounts:account")


@require_POST
def language(request: HttpRequest) -> HttpResponse:
    """Switch the interface language (the header's switch, the account page's choice): kept
    on the person's profile when signed in, and in the language cookie for this browser
    either way; "" goes back to the browser's ``Accept-Language``. Then back to ``next``, else
    to the page the switch was on (``Referer``: the header's form carries no path, so a page
    about a missing object and one about another team's are the same bytes)."""
    form = LanguageForm(request.POST)
    if not form.is_valid():
        messages.error(request, form.errors.as_text())
        return redirect("home")
    code = form.cleaned_data["language"]
    back = form.cleaned_data["next"] or request.headers.get("Referer", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        back = "/"
    if request.user.is_authenticated:
        user_set_language(user=request.user, language=code)
    response = redirect(back)
    if code:
        # the attributes Django's own set_language view gives the cookie
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME, code, max_age=settings.LANGUAGE_COOKIE_AGE,
            path=settings.LANGUAGE_COOKIE_PATH, domain=settings.LANGUAGE_COOKIE_DOMAIN,
            secure=settings.LANGUAGE_COOKIE_SECURE, httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE)
    else:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME, path=settings.LANGUAGE_COOKIE_PATH,
                               domain=settings.LANGUAGE_COOKIE_DOMAIN)
    return response


@login_required
@require_POST
def sign_out_everywhere(request: HttpRequest) -> HttpResponse:
    """End every session of the person, this one included."""
    user_sign_out_everywhere(user=request.user)
    logout(request)
    messages.success(request, _("You are signed out everywhere: every browser, and every open "
                                "room and page. Your API tokens still work until you revoke "
                                "them."))
    return redirect("accounts:login")
