"""Signing up and signing in (throttled: ``apps.accounts.throttle``), each able to accept the
invitation the person arrived with."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.accounts.forms import SignupForm, ThrottledLoginForm
from apps.accounts.views.invitations import accept_invitation, invitation_for

__all__ = ["LoginView", "signup"]


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Create an account, sign in with it, and accept the invitation it came with."""
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None, initial={"invite": request.GET.get("invite", "")})
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user)
        accept_invitation(request, form.cleaned_data["invite"])
        return redirect("home")
    return render(request, "accounts/signup.html",
                  {"form": form, "invitation": invitation_for(_invite(form))})


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
        response = super().form_invalid(form)
        if form.has_error("__all__", "throttled"):
            response.status_code = 429
        return response


def _invite(form: Form) -> str:
    """The invitation token a form carries (bound or initial)."""
    value = form["invite"].value()
    return value if isinstance(value, str) else ""
