"""API keys at rest: ciphertext in the database, loud failures on bad keys, rotation."""

from __future__ import annotations

from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from apps.integrations.crypto import DecryptionError, Sealed, secret_stored
from apps.integrations.models import ProviderConfig
from tests.integration.integrations.conftest import API_KEY

pytestmark = pytest.mark.django_db

OLD, NEW, LOST = (Fernet.generate_key().decode() for _ in range(3))


def stored(config: ProviderConfig) -> str:
    """The api_key column as the database holds it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key FROM integrations_providerconfig WHERE id = %s",
                       [config.pk])
        return cursor.fetchone()[0]


def make_provider(name: str, key: str) -> ProviderConfig:
    return ProviderConfig.objects.create(name=name, kind="anthropic",
                                         base_url="https://api.anthropic.com", api_key=key)


def test_the_database_holds_ciphertext_not_the_key(provider: ProviderConfig) -> None:
    column = stored(provider)
    assert API_KEY not in column
    assert column.startswith("gAAAAA")  # a Fernet token
    assert ProviderConfig.objects.get(pk=provider.pk).api_key == API_KEY


def test_an_empty_key_stays_empty(db: None) -> None:
    assert stored(make_provider("Keyless", "")) == ""


def test_a_malformed_key_setting_fails_loudly(db: None) -> None:
    with override_settings(CONFAB_FERNET_KEYS=["not-a-fernet-key"]), \
            pytest.raises(ImproperlyConfigured, match="not a valid Fernet key"):
        make_provider("Vendor", API_KEY)


def test_a_value_no_configured_key_opens_fails_loudly_when_it_is_read(db: None) -> None:
    with override_settings(CONFAB_FERNET_KEYS=[LOST]):
        config = make_provider("Vendor", API_KEY)
    with override_settings(CONFAB_FERNET_KEYS=[NEW]):
        loaded = ProviderConfig.objects.get(pk=config.pk)  # listing it needs no key
        assert loaded.name == "Vendor"
        with pytest.raises(DecryptionError, match="cannot be decrypted"):
            loaded.api_key  # noqa: B018 (the read is the test)
        with pytest.raises(DecryptionError):  # and again: nothing half-open stays behind
            loaded.api_key  # noqa: B018


def test_a_row_saved_with_its_secret_unread_keeps_its_token(db: None) -> None:
    with override_settings(CONFAB_FERNET_KEYS=[LOST]):
        config = make_provider("Vendor", API_KEY)
    token = stored(config)
    with override_settings(CONFAB_FERNET_KEYS=[NEW]):
        loaded = ProviderConfig.objects.get(pk=config.pk)
        loaded.base_url = "https://llm2.example.com"
        loaded.save()
        assert secret_stored(loaded, "api_key")  # without decrypting it
    assert stored(config) == token  # not re-encrypted, not lost
    with override_settings(CONFAB_FERNET_KEYS=[LOST]):
        assert ProviderConfig.objects.get(pk=config.pk).api_key == API_KEY


def test_a_secret_is_stored_tells_without_decrypting(provider: ProviderConfig) -> None:
    keyless = make_provider("Keyless", "")
    deferred = ProviderConfig.objects.defer("api_key").get(pk=provider.pk)
    with override_settings(CONFAB_FERNET_KEYS=[LOST]):  # no key opens either
        assert secret_stored(ProviderConfig.objects.get(pk=provider.pk), "api_key")
        assert secret_stored(deferred, "api_key")
        assert not secret_stored(ProviderConfig.objects.get(pk=keyless.pk), "api_key")


def test_values_give_the_secret_sealed(provider: ProviderConfig) -> None:
    sealed = ProviderConfig.objects.values_list("api_key", flat=True).get(pk=provider.pk)
    assert isinstance(sealed, Sealed)
    assert sealed.token == stored(provider)
    assert API_KEY not in repr(sealed) and API_KEY not in str(sealed)
    assert sealed.token not in repr(sealed) and sealed.token not in str(sealed)
    assert sealed.open() == API_KEY


def test_rotation_moves_every_secret_to_the_newest_key(db: None) -> None:
    with override_settings(CONFAB_FERNET_KEYS=[OLD]):
        first, second = make_provider("A", "key-a"), make_provider("B", "key-b")
        make_provider("Keyless", "")
    out = StringIO()
    with override_settings(CONFAB_FERNET_KEYS=[NEW, OLD]):
        call_command("rotate_secrets", stdout=out)
    assert "integrations.ProviderConfig.api_key: 2 value(s) re-encrypted" in out.getvalue()
    with override_settings(CONFAB_FERNET_KEYS=[NEW]):  # the old key can now be dropped
        assert ProviderConfig.objects.get(pk=first.pk).api_key == "key-a"
        assert ProviderConfig.objects.get(pk=second.pk).api_key == "key-b"


def test_rotation_stops_at_a_value_it_cannot_read_and_changes_nothing(db: None) -> None:
    with override_settings(CONFAB_FERNET_KEYS=[OLD]):
        readable = make_provider("A", "key-a")
    with override_settings(CONFAB_FERNET_KEYS=[LOST]):
        lost = make_provider("B", "key-b")
    before = stored(readable)
    with override_settings(CONFAB_FERNET_KEYS=[NEW, OLD]), \
            pytest.raises(CommandError, match=f"row {lost.pk}.*cannot be decrypted"):
        call_command("rotate_secrets", stdout=StringIO())
    assert stored(readable) == before


def test_rotation_with_a_malformed_key_fails_loudly(provider: ProviderConfig) -> None:
    with override_settings(CONFAB_FERNET_KEYS=["garbage", NEW]), \
            pytest.raises(CommandError, match="CONFAB_FERNET_KEYS is not usable"):
        call_command("rotate_secrets", stdout=StringIO())
