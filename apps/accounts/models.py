"""People and tenants: User, Team (the tenant), Membership (a role), Invitation, ApiToken."""

from __future__ import annotations

import hashlib
import unicodedata

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.crypto import salted_hmac
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.common.models import TimeStampedModel


class User(AbstractUser):
    """A person. Custom from the start, as Django recommends; ``display_name`` is what a room
    shows (and what the model sees as the author of a message).

    ``session_generation`` is part of the session auth hash (beside the password, as in
    Django's own hash): "sign out everywhere" counts it up, so every session signed in before
    stops verifying, exactly as after a password change."""

    display_name = models.CharField(verbose_name=_("display name"), max_length=80, blank=True)
    session_generation = models.PositiveIntegerField(verbose_name=_("session generation"),
                                                     default=0)
    # The interface language (a code of settings.LANGUAGES); blank: the browser's choice.
    language = models.CharField(verbose_name=_("language"), max_length=10, blank=True,
                                choices=settings.LANGUAGES)
    # The IANA time zone dates are shown in (apps.accounts.time_zones); blank: TIME_ZONE.
    time_zone = models.CharField(verbose_name=_("time zone"), max_length=64, blank=True)

    @property
    def shown_name(self) -> str:
        return self.display_name or self.get_full_name() or self.username

    def _get_session_auth_hash(self, secret: str | None = None) -> str:
        """Django's HMAC of the password hash, with the session generation mixed in once it
        is above 0 (at 0 it is Django's own hash, so sessions from before the field existed
        still verify). Django's ``get_session_auth_hash`` and its ``SECRET_KEY_FALLBACKS``
        variant both call this."""
        if not self.session_generation:
            return super()._get_session_auth_hash(secret)
        return salted_hmac("apps.accounts.models.User.get_session_auth_hash",
                           f"{self.session_generation}:{self.password}", secret=secret,
                           algorithm="sha256").hexdigest()


class Role(models.TextChoices):
    """What a member may do. Viewers watch; members talk, steer, stop and approve; admins and
    owners also manage the team."""

    OWNER = "owner", _("Owner")
    ADMIN = "admin", _("Admin")
    MEMBER = "member", _("Member")
    VIEWER = "viewer", _("Viewer")

    @property
    def can_write(self) -> bool:
        """Send messages, stop runs, decide on tool calls, answer questions."""
        return self != Role.VIEWER

    @property
    def can_manage(self) -> bool:
        """Invite, change roles, settings, MCP servers, tool policy."""
        return self in (Role.OWNER, Role.ADMIN)

    @property
    def rank(self) -> int:
        """Order of power: viewer 0 < member 1 < admin 2 < owner 3."""
        return _RANK[self]


_RANK = {Role.VIEWER: 0, Role.MEMBER: 1, Role.ADMIN: 2, Role.OWNER: 3}


def validate_agent_handle(value: str) -> None:
    """A team's name for its agent: letters and digits of any script (助手, Ассистент, and
    सहायक with its vowel signs), ``_`` and ``-``, not starting with ``-`` or a mark. Raises
    ValidationError (code ``invalid``) otherwise."""
    kinds = [unicodedata.category(char)[0] if char not in "_-" else char for char in value]
    if not kinds or kinds[0] in ("-", "M") or not set(kinds) <= {"L", "N", "M", "_", "-"}:
        raise ValidationError(
            _("Letters (of any language), digits, _ and - only, not starting with -."),
            code="invalid")


class Team(TimeStampedModel):
    """The tenant: every room, conversation, wiki and MCP server belongs to one.

    ``tool_policy``: which tools need a member's approval before they run:
    ``{"require": [tool names], "exempt": [tool names]}`` on top of each tool's own default
    (writes, shell commands that are not read-only, destructive MCP tools).
    ``agent_handle``: the team's name for its agent; ``@<handle>`` calls it in a conversation
    in ``mention`` mode (``@agent`` always does too).
    """

    name = models.CharField(verbose_name=_("name"), max_length=100)
    slug = models.SlugField(verbose_name=_("slug"), max_length=100, unique=True)
    tool_policy = models.JSONField(verbose_name=_("tool policy"), default=dict, blank=True)
    agent_handle = models.CharField(verbose_name=_("agent handle"), max_length=30,
                                    default="agent", validators=[validate_agent_handle])
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("created by"),
                                   null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        verbose_name = _("team")
        verbose_name_plural = _("teams")

    def __str__(self) -> str:
        return self.name


class Membership(TimeStampedModel):
    """A user's role in a team."""

    team = models.ForeignKey(Team, verbose_name=_("team"), on_delete=models.CASCADE,
                             related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("user"),
                             on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(verbose_name=_("role"), max_length=10, choices=Role.choices,
                            default=Role.MEMBER)

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership")]

    @property
    def role_enum(self) -> Role:
        return Role(self.role)

    def __str__(self) -> str:
        return gettext("%(user)s in %(team)s (%(role)s)") % {
            "user": self.user, "team": self.team, "role": self.get_role_display()}


def hash_secret(raw: str) -> str:
    """SHA-256 hex of a token: tokens are random, so a fast hash is the right one."""
    return hashlib.sha256(raw.encode()).hexdigest()


class Invitation(TimeStampedModel):
    """A link that makes whoever opens it (signed in) a member with ``role``. Only the hash of
    the token is stored; the link is shown once."""

    team = models.ForeignKey(Team, verbose_name=_("team"), on_delete=models.CASCADE,
                             related_name="invitations")
    role = models.CharField(verbose_name=_("role"), max_length=10, choices=Role.choices,
                            default=Role.MEMBER)
    email = models.EmailField(verbose_name=_("email address"), blank=True)
    token_hash = models.CharField(verbose_name=_("token hash"), max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("created by"),
                                   null=True, on_delete=models.SET_NULL, related_name="+")
    expires_at = models.DateTimeField(verbose_name=_("expires at"))
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("accepted by"),
                                    null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    accepted_at = models.DateTimeField(verbose_name=_("accepted at"), null=True, blank=True)
    revoked = models.BooleanField(verbose_name=_("revoked"), default=False)

    class Meta:
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")


class ApiToken(TimeStampedModel):
    """A personal API token (``Authorization: Bearer cf_...``). Stored hashed, shown once;
    ``prefix`` (the first characters) lets a person recognise it in a list."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("user"),
                             on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(verbose_name=_("name"), max_length=100)
    prefix = models.CharField(verbose_name=_("prefix"), max_length=12)
    key_hash = models.CharField(verbose_name=_("key hash"), max_length=64, unique=True)
    last_used_at = models.DateTimeField(verbose_name=_("last used at"), null=True, blank=True)
    revoked = models.BooleanField(verbose_name=_("revoked"), default=False)

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
