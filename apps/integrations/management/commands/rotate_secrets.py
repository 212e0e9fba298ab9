"""``manage.py rotate_secrets``: re-encrypt every stored secret with the newest key.

Key rotation (DESIGN 4): 1) prepend a new key to CONFAB_FERNET_KEYS in EVERY process (they can
then read values under either key), 2) run this command, 3) drop the old key. The command runs
in one transaction: when any value cannot be decrypted with the configured keys it fails loudly,
naming the table, column and row, and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, models, transaction

from apps.integrations.crypto import DecryptionError, EncryptedTextField, rotate


def encrypted_fields() -> Iterator[tuple[type[models.Model], EncryptedTextField]]:
    """Every EncryptedTextField of every concrete, managed model."""
    for model in apps.get_models():
        if model._meta.proxy or not model._meta.managed:
            continue
        for field in model._meta.concrete_fields:
            if isinstance(field, EncryptedTextField):
                yield model, field


class Command(BaseCommand):
    help = "Re-encrypt every EncryptedTextField value with the newest CONFAB_FERNET_KEYS key."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            with transaction.atomic():
                for model, field in encrypted_fields():
                    count = _rotate_column(model, field)
                    self.stdout.write(f"{model._meta.label}.{field.name}: {count} value(s) "
                                      "re-encrypted")
        except ImproperlyConfigured as exc:
            raise CommandError(f"CONFAB_FERNET_KEYS is not usable: {exc}") from exc
        self.stdout.write(self.style.SUCCESS("Every secret is now under the newest key."))


def _rotate_column(model: type[models.Model], field: EncryptedTextField) -> int:
    # Raw SQL on purpose: the ORM would decrypt on read and encrypt anew on write, losing the
    # point (and the original timestamp) of MultiFernet.rotate on the stored token.
    quote = connection.ops.quote_name
    table, column = quote(model._meta.db_table), quote(field.column)
    pk = quote(model._meta.pk.column)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {pk}, {column} FROM {table} WHERE {column} <> '' ORDER BY {pk}")
        rows = cursor.fetchall()
        for row_id, token in rows:
            try:
                fresh = rotate(token)
            except DecryptionError as exc:
                raise CommandError(f"{model._meta.db_table}.{field.column} of row {row_id}: "
                                   f"{exc}. Nothing was changed.") from exc
            cursor.execute(f"UPDATE {table} SET {column} = %s WHERE {pk} = %s", [fresh, row_id])
    return len(rows)
