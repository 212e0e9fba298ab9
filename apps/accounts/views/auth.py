"""Signing up, signing in and asking for a password reset, all three throttled
(``apps.accounts.throttle``: 429 with the form's message); signing up and signing in can accept
the invitation the person arrived with."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.accounts.forms import SignupForm, ThrottledLoginForm, ThrottledPasswordResetForm
from apps.accounts.views.invitations import accept_invitation, invitation_for

__all__ = ["LoginView", "PasswordResetView", "signup"]


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Create an account, sign in with it, and accept the invitation it came with."""
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None, request=request,
                      initial={"invite": request.GET.get("invite", "")})
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user)
        accept_invitation(request, form.cleaned_data["invite"])
        return redirect("home")
    return _throttled(form, render(request, "accounts/signup.html",
                                   {"form": form, "invitation": invitation_for(_invite(form))}))


class LoginView(auth_views.LoginView):
    """Django's sign-in page with the throttle's message (status 429 while locked out) and the
    invitation the person arrived with."""

    form_class = ThrottledLoginForm
    template_name = "accounts/login.html"

    def get_initial(self) -> dict[str, Any]:
        return {"invite": self.request.GET.get("invite", "")}

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["invitation"] = invitation_for(_invite(context["form"]))
        return context

    def form_valid(self, form: ThrottledLoginForm) -> HttpResponse:
        response = super().form_valid(form)
        accept_invitation(self.request, form.cleaned_data["invite"])
        return response

    def form_invalid(self, form: ThrottledLoginForm) -> HttpResponse:
        return _throttled(form, super().form_invalid(form))


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset request page, throttled (status 429 past the limit, and no mail)."""

    form_class = ThrottledPasswordResetForm

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}

    def form_invalid(self, form: ThrottledPasswordResetForm) -> HttpResponse:
        return _throttled(form, super().form_invalid(form))


def _throttled(form: Form, response: HttpResponse) -> HttpResponse:
    """``response``, as 429 Too Many Requests when the throttle refused the form."""
    if form.is_bound and form.has_error("__all__", "throttled"):
        response.status_code = 429
    return response


def _invite(form: Form) -> str:
    """The invitation token a form carries (bound or initial)."""
    value = form["invite"].value()
    return value if isinstance(value, str) else ""
