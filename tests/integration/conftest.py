"""Integration fixtures: the personas (alice, bob, carol of Acme; charlie of Globex), and the
clean-up async tests that touch the database need."""

from collections.abc import AsyncIterator

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from tests.integration.personas import *  # noqa: F403


@pytest.fixture
async def close_db_threads() -> AsyncIterator[None]:
    """Close the connection the async ORM opened in asgiref's shared sync thread: left open,
    it keeps PostgreSQL from dropping the test database at the end of the session."""
    yield
    await sync_to_async(connections.close_all)()
