"""ORM tests that need PostgreSQL itself (row locks, partial unique indexes, concurrency).

They run in-process with pytest-django like any Django test, but only when the Django database
is PostgreSQL: ``tests/integration/test_services.py::test_orm_tests_run_on_postgres`` runs this
directory in a second pytest process with ``DATABASE_URL`` pointing at the session's
PostgreSQL (and ``REDIS_URL`` at its Redis). In the main run (SQLite) they are skipped. To run
them by hand against any server: ``DATABASE_URL=postgresql://... pytest tests/postgres``.
"""

from __future__ import annotations

import pytest
from django.db import connection


@pytest.fixture(autouse=True)
def _needs_postgres() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: run by tests/integration/test_services.py in a pytest "
                    "process with DATABASE_URL set")
