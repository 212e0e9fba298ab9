"""Personal API tokens: shown once, stored hashed, revocable, ``last_used_at`` rate-limited."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test import RequestFactory
from django.utils import timezone

from apps.accounts.auth import bearer_token, bearer_user
from apps.accounts.models import ApiToken, User, hash_secret
from apps.accounts.services import (
    aapi_token_authenticate,
    api_token_authenticate,
    api_token_create,
    api_token_revoke,
)
from apps.common.errors import ApplicationError, ErrorCode
from tests.integration.personas import mint_token

pytestmark = pytest.mark.django_db


def test_the_raw_token_is_not_in_the_database(bob: User) -> None:
    token, raw = api_token_create(user=bob, name="laptop")
    assert raw.startswith("cf_") and len(raw) >= 40
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_apitoken WHERE id = %s", [token.pk])
        row = cursor.fetchone()
    assert not any(raw in str(value) for value in row)
    assert token.key_hash == hash_secret(raw)
    assert token.prefix == raw[:10]  # enough to recognise it in a list, not to use it


def test_a_token_authenticates_its_user(bob: User) -> None:
    assert api_token_authenticate(mint_token(bob)) == bob


@pytest.mark.parametrize("raw", [None, "", "cf_nope", "not-ours", "cf_" + "x" * 400])
def test_unknown_or_malformed_tokens_authenticate_nobody(bob: User, raw: str | None) -> None:
    mint_token(bob)
    assert api_token_authenticate(raw) is None


def test_a_revoked_token_no_longer_works(bob: User) -> None:
    token, raw = api_token_create(user=bob, name="ci")
    api_token_revoke(user=bob, token_id=token.pk)
    assert api_token_authenticate(raw) is None
    api_token_revoke(user=bob, token_id=token.pk)  # idempotent


def test_a_deactivated_users_token_no_longer_works(bob: User) -> None:
    raw = mint_token(bob)
    User.objects.filter(pk=bob.pk).update(is_active=False)
    assert api_token_authenticate(raw) is None


def test_charlie_cannot_revoke_bobs_token(bob: User, charlie: User) -> None:
    token, raw = api_token_create(user=bob, name="ci")
    with pytest.raises(ApplicationError) as caught:
        api_token_revoke(user=charlie, token_id=token.pk)
    assert caught.value.code is ErrorCode.NOT_FOUND
    assert api_token_authenticate(raw) == bob


@pytest.mark.parametrize("name", ["", "  ", "n" * 101])
def test_a_token_needs_a_name(bob: User, name: str) -> None:
    with pytest.raises(ApplicationError) as caught:
        api_token_create(user=bob, name=name)
    assert caught.value.code is ErrorCode.INVALID


def test_last_used_is_written_at_most_once_a_minute(bob: User) -> None:
    token, raw = api_token_create(user=bob, name="ci")
    api_token_authenticate(raw)
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    api_token_authenticate(raw)
    token.refresh_from_db()
    assert token.last_used_at == first  # within the minute: not written again
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    api_token_authenticate(raw)
    token.refresh_from_db()
    assert token.last_used_at > first - timedelta(seconds=1)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_db_threads")
async def test_the_async_variant_authenticates_and_records_use(bob: User) -> None:
    token, raw = await sync_to_async(api_token_create)(user=bob, name="async")
    assert await aapi_token_authenticate(raw) == bob
    await token.arefresh_from_db()
    assert token.last_used_at is not None and token.last_used_at <= timezone.now()
    assert await aapi_token_authenticate("cf_wrong") is None


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer cf_abc", "cf_abc"),
    ("bearer   cf_abc  ", "cf_abc"),
    ("Basic dXNlcjpwYXNz", None),
    ("Bearer", None),
    ("", None),
    (None, None),
])
def test_bearer_header_parsing(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_bearer_user_reads_the_authorization_header(bob: User) -> None:
    raw = mint_token(bob)
    factory = RequestFactory()
    assert bearer_user(factory.get("/", HTTP_AUTHORIZATION=f"Bearer {raw}")) == bob
    assert bearer_user(factory.get("/", HTTP_AUTHORIZATION="Bearer cf_forged")) is None
    assert bearer_user(factory.get("/")) is None
