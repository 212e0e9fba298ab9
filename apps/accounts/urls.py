"""Pages about people and teams (namespace ``accounts``), mounted at the site root."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from apps.accounts.views import account, auth, invitations, teams, tokens

app_name = "accounts"

_password_reset = auth.PasswordResetView.as_view(
    template_name="accounts/password_reset_form.html",
    email_template_name="accounts/password_reset_email.txt",
    subject_template_name="accounts/password_reset_subject.txt",
    success_url=reverse_lazy("accounts:password_reset_done"),
)
_password_reset_confirm = auth_views.PasswordResetConfirmView.as_view(
    template_name="accounts/password_reset_confirm.html",
    success_url=reverse_lazy("accounts:password_reset_complete"),
)

urlpatterns = [
    path("accounts/signup/", auth.signup, name="signup"),
    path("accounts/login/", auth.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="accounts:login"),
         name="logout"),
    path("accounts/password_reset/", _password_reset, name="password_reset"),
    path("accounts/password_reset/done/", auth_views.PasswordResetDoneView.as_view(
        template_name="accounts/password_reset_done.html"), name="password_reset_done"),
    path("accounts/reset/<uidb64>/<token>/", _password_reset_confirm,
         name="password_reset_confirm"),
    path("accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(
        template_name="accounts/password_reset_complete.html"), name="password_reset_complete"),
    path("accounts/", account.account, name="account"),
    path("accounts/language/", account.language, name="language"),
    path("accounts/time-zone/", account.time_zone, name="time_zone"),
    path("accounts/sign-out-everywhere/", account.sign_out_everywhere,
         name="sign_out_everywhere"),
    path("accounts/tokens/", tokens.tokens, name="tokens"),
    path("accounts/tokens/<int:token_id>/revoke/", tokens.token_revoke, name="token_revoke"),
    path("teams/new/", teams.team_new, name="team_new"),
    path("teams/<int:team_id>/switch/", teams.team_switch_view, name="team_switch"),
    path("teams/<int:team_id>/members/", teams.team_members, name="team_members"),
    path("teams/<int:team_id>/members/<int:user_id>/role/", teams.member_role,
         name="member_role"),
    path("teams/<int:team_id>/members/<int:user_id>/remove/", teams.member_remove,
         name="member_remove"),
    path("teams/<int:team_id>/invitations/", teams.invitation_new, name="invitation_new"),
    path("teams/<int:team_id>/invitations/<int:invitation_id>/revoke/",
         teams.invitation_revoke_view, name="invitation_revoke"),
    path("invite/<str:token>/", invitations.invitation, name="invitation"),
]
