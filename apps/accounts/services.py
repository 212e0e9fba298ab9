"""Writes about people and teams: teams, memberships, invitations, personal API tokens.

Rules every function keeps:

- only owners and admins manage a team; a person who is not a member gets ``not_found`` (the
  same answer as for a team that does not exist), a member without the role ``forbidden``;
- only an owner grants the owner role, changes an owner's role or removes an owner;
- a team never loses its last owner (``conflict``): membership writes lock the team row, so two
  owners demoting each other at the same instant cannot both succeed;
- removing a membership or changing its role sends ``membership_changed`` after commit
  (``apps.accounts.signals``), revoking a token or signing out everywhere
  ``credentials_changed``;
- secrets (invitation links, API tokens) are random, returned once, stored as SHA-256 only.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext

from apps.accounts.models import ApiToken, Invitation, Membership, Role, Team, User, hash_secret
from apps.accounts.permissions import require_manager, require_member, require_owner_for
from apps.accounts.signals import (
    send_credentials_changed_on_commit,
    send_membership_changed_on_commit,
)
from apps.accounts.time_zones import time_zone_known
from apps.common.errors import ApplicationError, ErrorCode, not_found

__all__ = [
    "INVITATION_TTL",
    "TOKEN_PREFIX",
    "aapi_token_authenticate",
    "api_token_authenticate",
    "api_token_create",
    "api_token_revoke",
    "invitation_accept",
    "invitation_create",
    "invitation_revoke",
    "membership_remove",
    "membership_set_role",
    "team_create",
    "user_set_time_zone",
    "user_sign_out_everywhere",
]

TOKEN_PREFIX = "cf_"
"""Every API token starts with it, so a leaked one is recognisable (and scannable)."""
_TOKEN_SHOWN_CHARS = 10  # "cf_" + 7 random characters, kept in ApiToken.prefix for lists
_TOKEN_MAX_LEN = 200  # longer input is not one of ours: refused before hashing
LAST_USED_EVERY = timedelta(minutes=1)
INVITATION_TTL = timedelta(days=7)
MAX_INVITATION_TTL = timedelta(days=90)


# -- teams -----------------------------------------------------------------------------------
@transaction.atomic
def team_create(*, name: str, owner: User) -> Team:
    """A new team named ``name`` with ``owner`` as its owner; the slug is made unique
    ("acme", "acme-2", ...). ``invalid`` for a blank or too long name."""
    name = name.strip()
    if not name or len(name) > Team._meta.get_field("name").max_length:
        raise ApplicationError(ErrorCode.INVALID, gettext("A team name has 1 to 100 characters."))
    team = _insert_team(name, owner)
    Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    return team


def _insert_team(name: str, owner: User) -> Team:
    base = slugify(name)[:90].strip("-") or "team"
    for _ in range(3):  # another insert may take the slug between the read and the write
        taken = set(Team.objects.filter(slug__startswith=base).values_list("slug", flat=True))
        slug = _free_slug(base, taken)
        try:
            with transaction.atomic():  # a savepoint: a lost race undoes only this insert
                return Team.objects.create(name=name, slug=slug, created_by=owner)
        except IntegrityError:
            continue
    return Team.objects.create(name=name, slug=f"{base}-{secrets.token_hex(4)}", created_by=owner)


def _free_slug(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


# -- memberships -----------------------------------------------------------------------------
@transaction.atomic
def membership_set_role(*, team: Team, user: User, role: Role | str, by: User) -> Membership:
    """Give ``user`` the role ``role`` in ``team``; returns the membership.

    Errors: ``not_found`` (``by`` or ``user`` not a member), ``forbidden`` (``by`` not a
    manager, or an admin touching the owner role), ``conflict`` (demoting the last owner),
    ``invalid`` (unknown role). Setting the current role again changes and sends nothing.
    """
    role = _role(role)
    _lock(team)
    actor = require_manager(by, team)
    target = _membership(team, user)
    require_owner_for(actor, role, target.role_enum)
    if target.role_enum == role:
        return target
    if target.role_enum == Role.OWNER:
        _keep_an_owner(team, leaving=target)
    target.role = role
    target.save(update_fields=["role", "updated_at"])
    send_membership_changed_on_commit(team_id=team.pk, user_id=user.pk, role=role.value)
    return target


@transaction.atomic
def membership_remove(*, team: Team, user: User, by: User) -> None:
    """Remove ``user`` from ``team``. Anyone may leave (``by`` is ``user``); removing someone
    else takes a manager, and removing an owner takes an owner.

    Errors: ``not_found``, ``forbidden``, ``conflict`` (the last owner) as for
    :func:`membership_set_role`.
    """
    _lock(team)
    leaving = by.pk == user.pk
    actor = require_member(by, team) if leaving else require_manager(by, team)
    target = _membership(team, user)
    if not leaving:
        require_owner_for(actor, target.role_enum)
    if target.role_enum == Role.OWNER:
        _keep_an_owner(team, leaving=target)
    target.delete()
    send_membership_changed_on_commit(team_id=team.pk, user_id=user.pk, role=None)


def _lock(team: Team) -> None:
    """Serialize membership writes of one team (row lock; SQLite's writes are serial anyway)."""
    Team.objects.select_for_update().filter(pk=team.pk).exists()


def _membership(team: Team, user: User) -> Membership:
    membership = Membership.objects.filter(team=team, user=user).first()
    if membership is None:
        raise not_found("member")
    return membership


def _keep_an_owner(team: Team, *, leaving: Membership) -> None:
    others = Membership.objects.filter(team=team, role=Role.OWNER).exclude(pk=leaving.pk)
    if not others.exists():
        raise ApplicationError(ErrorCode.CONFLICT, gettext(
            "A team needs at least one owner: make someone else an owner first."))


def _role(value: Role | str) -> Role:
    try:
        return Role(value)
    except ValueError:
        raise ApplicationError(
            ErrorCode.INVALID, gettext("Unknown role %(role)r.") % {"role": value}) from None


# -- invitations -----------------------------------------------------------------------------
def invitation_create(
    *, team: Team, role: Role | str, by: User, email: str = "",
    ttl: timedelta = INVITATION_TTL,
) -> tuple[Invitation, str]:
    """An invitation to join ``team`` as ``role``, valid for ``ttl``; returns it with the raw
    token (put it in the link; it is shown once and only its hash is stored). With ``email``
    only a user with that address may accept it.

    Errors: ``not_found``/``forbidden`` as for a manager's action (only an owner invites an
    owner), ``invalid`` (unknown role, bad email, ttl not in (0, 90 days]).
    """
    role = _role(role)
    actor = require_manager(by, team)
    require_owner_for(actor, role)
    if not timedelta(0) < ttl <= MAX_INVITATION_TTL:
        raise ApplicationError(ErrorCode.INVALID, gettext(
            "An invitation lasts from 1 second to 90 days."))
    email = _clean_email(email)
    raw = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        team=team, role=role, email=email, token_hash=hash_secret(raw), created_by=by,
        expires_at=timezone.now() + ttl,
    )
    return invitation, raw


def _clean_email(email: str) -> str:
    email = email.strip().lower()
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise ApplicationError(ErrorCode.INVALID, gettext("%(email)r is not an email address.")
                                   % {"email": email}) \
                from None
    return email


@transaction.atomic
def invitation_accept(*, token: str, user: User) -> Membership:
    """Use the invitation whose raw token is ``token``: ``user`` joins its team; returns the
    membership. An existing member keeps the higher of the two roles (an invitation never
    demotes; a higher role is granted and announced with ``membership_changed``).

    Errors: ``not_authenticated``; ``not_found`` (no such token); ``invalid`` (revoked or
    expired); ``conflict`` (already used, also by a concurrent accept); ``forbidden`` (the
    invitation names another email address).
    """
    if not user.is_authenticated:
        raise ApplicationError(ErrorCode.NOT_AUTHENTICATED, gettext(
            "Sign in to accept an invitation."))
    invitation = (Invitation.objects.select_related("team")
                  .filter(token_hash=hash_secret(token)).first())
    if invitation is None:
        raise not_found("invitation")
    _check_usable(invitation, user)
    # The conditional update is the claim: of two concurrent accepts only one matches a row.
    claimed = Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True,
                                        revoked=False).update(accepted_by=user,
                                                              accepted_at=timezone.now())
    if not claimed:
        raise ApplicationError(
            ErrorCode.CONFLICT, gettext("This invitation has already been used."))
    return _join(invitation.team, user, Role(invitation.role))


def _check_usable(invitation: Invitation, user: User) -> None:
    if invitation.revoked:
        raise ApplicationError(ErrorCode.INVALID, gettext("This invitation has been revoked."))
    if invitation.accepted_at is not None:
        raise ApplicationError(
            ErrorCode.CONFLICT, gettext("This invitation has already been used."))
    if invitation.expires_at <= timezone.now():
        raise ApplicationError(ErrorCode.INVALID, gettext("This invitation has expired."))
    if invitation.email and invitation.email != user.email.strip().lower():
        raise ApplicationError(ErrorCode.FORBIDDEN,
                               gettext("This invitation is for another email address."))


def _join(team: Team, user: User, role: Role) -> Membership:
    _lock(team)
    membership = Membership.objects.filter(team=team, user=user).first()
    if membership is None:
        return Membership.objects.create(team=team, user=user, role=role)
    if membership.role_enum.rank >= role.rank:
        return membership
    membership.role = role
    membership.save(update_fields=["role", "updated_at"])
    send_membership_changed_on_commit(team_id=team.pk, user_id=user.pk, role=role.value)
    return membership


def invitation_revoke(*, team: Team, invitation_id: int, by: User) -> Invitation:
    """Revoke an unused invitation of ``team`` (idempotent). Errors: ``not_found`` (not a
    member, or no such invitation in this team), ``forbidden`` (not a manager; an admin
    revoking an owner invitation), ``conflict`` (already accepted)."""
    actor = require_manager(by, team)
    invitation = team.invitations.filter(pk=invitation_id).first()
    if invitation is None:
        raise not_found("invitation")
    require_owner_for(actor, Role(invitation.role))
    if invitation.accepted_at is not None:
        raise ApplicationError(
            ErrorCode.CONFLICT, gettext("This invitation has already been used."))
    if not invitation.revoked:
        invitation.revoked = True
        invitation.save(update_fields=["revoked", "updated_at"])
    return invitation


# -- sessions --------------------------------------------------------------------------------
def user_sign_out_everywhere(*, user: User) -> None:
    """End every session of ``user`` (every browser, and their open sockets): the session
    generation goes up, so no session signed in before verifies any more. API tokens are not
    sessions: they stay until revoked."""
    User.objects.filter(pk=user.pk).update(session_generation=F("session_generation") + 1)
    user.refresh_from_db(fields=["session_generation"])
    send_credentials_changed_on_commit(user_id=user.pk)


def user_set_language(*, user: User, language: str) -> None:
    """Keep ``language`` (a code of ``settings.LANGUAGES``, or "" for the browser's choice) as
    the person's interface language; ``invalid`` for any other code."""
    if language and language not in dict(settings.LANGUAGES):
        raise ApplicationError(
            ErrorCode.INVALID, gettext("%(language)r is not a language of confab.")
                               % {"language": language})
    user.language = language
    user.save(update_fields=["language"])


def user_set_time_zone(*, user: User, time_zone: str) -> None:
    """Keep ``time_zone`` (an IANA name, e.g. "Asia/Shanghai", or "" for the site's
    ``TIME_ZONE``) as the zone the person's dates are shown in; ``invalid`` for a name the tz
    database does not know (nothing is stored then)."""
    if time_zone and not time_zone_known(time_zone):
        raise ApplicationError(ErrorCode.INVALID, gettext(
            "%(zone)r is not a time zone (write it as the tz database does, e.g. "
            "Asia/Shanghai).") % {"zone": time_zone})
    user.time_zone = time_zone
    user.save(update_fields=["time_zone"])


# -- personal API tokens ---------------------------------------------------------------------
def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """A new token for ``user``; returns the row and the raw token ``cf_<random>`` (shown
    once: only its SHA-256 is stored). ``invalid`` for a blank or too long name."""
    name = name.strip()
    if not name or len(name) > ApiToken._meta.get_field("name").max_length:
        raise ApplicationError(ErrorCode.INVALID, gettext("A token name has 1 to 100 characters."))
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=raw[:_TOKEN_SHOWN_CHARS],
                                    key_hash=hash_secret(raw))
    return token, raw


def api_token_revoke(*, user: User, token_id: int) -> ApiToken:
    """Revoke one of ``user``'s tokens (idempotent); ``not_found`` for anyone else's."""
    token = user.api_tokens.filter(pk=token_id).first()
    if token is None:
        raise not_found("token")
    if not token.revoked:
        token.revoked = True
        token.save(update_fields=["revoked", "updated_at"])
        send_credentials_changed_on_commit(user_id=user.pk)  # its open sockets close
    return token


def api_token_authenticate(raw: str | None) -> User | None:
    """The active user a raw token belongs to, or None (unknown, revoked, malformed token, or
    a deactivated user). Records ``last_used_at``, at most once a minute per token."""
    tokens = _live_tokens(raw)
    if tokens is None:
        return None
    token = tokens.first()
    if token is None:
        return None
    if _stale(token):
        _touchable(token).update(last_used_at=timezone.now())
    return token.user


async def aapi_token_authenticate(raw: str | None) -> User | None:
    """Async form of :func:`api_token_authenticate` (for the WebSocket middleware)."""
    tokens = _live_tokens(raw)
    if tokens is None:
        return None
    token = await tokens.afirst()
    if token is None:
        return None
    if _stale(token):
        await _touchable(token).aupdate(last_used_at=timezone.now())
    return token.user


def _live_tokens(raw: str | None) -> QuerySet[ApiToken] | None:
    # The lookup is by hash: a timing difference could only reveal a prefix of a SHA-256,
    # which says nothing about a 256-bit random token.
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > _TOKEN_MAX_LEN:
        return None
    return ApiToken.objects.select_related("user").filter(
        key_hash=hash_secret(raw), revoked=False, user__is_active=True)


def _stale(token: ApiToken) -> bool:
    return token.last_used_at is None or token.last_used_at < timezone.now() - LAST_USED_EVERY


def _touchable(token: ApiToken) -> QuerySet[ApiToken]:
    # The condition is repeated in the UPDATE so that many processes using one token at the
    # same moment write it once, not once each.
    cutoff = timezone.now() - LAST_USED_EVERY
    return ApiToken.objects.filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=cutoff),
                                   pk=token.pk)
