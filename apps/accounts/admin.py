"""Admin for site staff: users, teams with their members, invitations, API tokens.

Secrets are never shown: invitation and token hashes are left out of every page, and neither
can be created here (their raw value would have nowhere to be shown once). Role changes and
removals made through the team page send ``membership_changed`` like the services do, revoking
tokens sends ``credentials_changed`` (as do a password change and a deactivation, from the
user's save: ``apps.accounts.receivers``), and the team page refuses to leave a team without an
owner.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.utils.translation import gettext, gettext_lazy, ngettext

from apps.accounts.models import ApiToken, Invitation, Membership, Role, Team, User
from apps.accounts.signals import (
    send_credentials_changed_on_commit,
    send_membership_changed_on_commit,
)


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    fieldsets = (*DjangoUserAdmin.fieldsets,
                 (gettext_lazy("Profile"), {"fields": ("display_name",)}))
    add_fieldsets = (*DjangoUserAdmin.add_fieldsets,
                     (gettext_lazy("Profile"), {"fields": ("display_name",)}))
    list_display = ("username", "display_name", "email", "is_staff", "is_active")
    search_fields = ("username", "display_name", "email")


class MembershipFormSet(BaseInlineFormSet):
    def clean(self) -> None:
        """A team keeps at least one owner (when it has members at all); a membership keeps
        its user (replacing one by another would bypass the removal signal)."""
        super().clean()
        if any("user" in form.changed_data for form in self.initial_forms):
            raise ValidationError(gettext("Remove the membership and add a new one instead "
                                          "of changing its user."))
        kept = [form.cleaned_data for form in self.forms
                if form.cleaned_data and not form.cleaned_data.get("DELETE")]
        if kept and not any(data.get("role") == Role.OWNER for data in kept):
            raise ValidationError(gettext("A team needs at least one owner."))


class MembershipInline(admin.TabularInline):
    model = Membership
    formset = MembershipFormSet
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)
    autocomplete_fields = ("user",)
    extra = 0


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "created_at")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    # Edited by the team's owners and admins through the validating service, not here.
    readonly_fields = ("tool_policy", "agent_handle", "created_by", "created_at")
    inlines = (MembershipInline,)

    def save_formset(self, request: HttpRequest, form, formset, change: bool) -> None:
        """Save, then announce the role changes and removals the formset made."""
        if formset.model is not Membership:
            return super().save_formset(request, form, formset, change)
        changed = [f.instance for f in formset.initial_forms
                   if "role" in f.changed_data and f not in formset.deleted_forms]
        removed = [f.instance for f in formset.deleted_forms if f.instance.pk]
        super().save_formset(request, form, formset, change)
        for membership in changed:
            send_membership_changed_on_commit(team_id=membership.team_id,
                                              user_id=membership.user_id, role=membership.role)
        for membership in removed:
            send_membership_changed_on_commit(team_id=membership.team_id,
                                              user_id=membership.user_id, role=None)


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("team", "role", "email", "created_by", "expires_at", "accepted_by",
                    "revoked")
    list_filter = ("revoked", "role")
    search_fields = ("team__name", "email")
    # Read-only: revoking is the action below, and un-revoking is not a thing.
    fields = readonly_fields = ("team", "role", "email", "created_by", "expires_at",
                                "accepted_by", "accepted_at", "revoked")
    actions = ("revoke",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description=gettext_lazy("Revoke the selected invitations"))
    def revoke(self, request: HttpRequest, queryset: QuerySet[Invitation]) -> None:
        count = queryset.filter(accepted_at__isnull=True).update(revoked=True)
        self.message_user(request, ngettext("%(count)d invitation revoked.",
                                            "%(count)d invitations revoked.", count)
                          % {"count": count}, messages.SUCCESS)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked")
    list_filter = ("revoked",)
    search_fields = ("name", "user__username", "prefix")
    # Read-only: a revoked token may have leaked, so it is never brought back.
    fields = readonly_fields = ("user", "name", "prefix", "created_at", "last_used_at",
                                "revoked")
    actions = ("revoke",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description=gettext_lazy("Revoke the selected tokens"))
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        owners = set(queryset.filter(revoked=False).values_list("user_id", flat=True))
        count = queryset.update(revoked=True)
        for user_id in owners:  # their sockets that use these tokens close
            send_credentials_changed_on_commit(user_id=user_id)
        self.message_user(request, ngettext("%(count)d token revoked.",
                                            "%(count)d tokens revoked.", count)
                          % {"count": count}, messages.SUCCESS)
