"""pytest fixtures for the real services (registered in ``tests/conftest.py`` as a plugin).

Session-scoped servers start on first use only, so a run of unit tests starts nothing:

- ``redis_url``: ``redis://127.0.0.1:PORT/0`` of a redis-server for the whole session
  (``redis_server``: the :class:`~tests.services.redis.RedisServer`). Shared: use your own group
  and channel names, or call :func:`~tests.services.redis.flush`.
- ``postgres_url``: ``postgresql://postgres@127.0.0.1:PORT/confab``, an empty database on a
  PostgreSQL server for the whole session (``postgres_server``: the
  :class:`~tests.services.postgres.PostgresServer`, which can create more databases).
- ``postgres_template``: the name of a database migrated once per session (``manage.py
  migrate`` in a subprocess); ``postgres_database_url``: a fresh copy of it for one test,
  dropped afterwards (a copy takes ~50 ms, a migrate ~2 s).
- ``service_env``: the environment of a confab process for one test — ``config.settings``,
  ``CONFAB_ENV=test``, a temporary ``CONFAB_DATA_DIR``, ``DATABASE_URL`` =
  ``postgres_database_url``, ``REDIS_URL`` = ``redis_url`` — for
  :mod:`tests.services.django_proc`.
- ``e2e_stack``: a :class:`~tests.e2e.harness.ProcessStack` with ``service_env`` and Redis
  flushed; every process it started is stopped at teardown.

The time each server took to start is printed at the end of the run.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import ProcessStack
from tests.services.django_proc import django_env, run_manage
from tests.services.postgres import PostgresServer
from tests.services.redis import RedisServer, flush

_TEMPLATE = "confab_migrated"
_database_numbers = itertools.count(1)
_startup: dict[str, float] = {}


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        _startup["redis-server"] = server.startup_seconds or 0.0
        yield server


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        _startup["postgres (initdb + start + createdb)"] = server.startup_seconds or 0.0
        yield server


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    return postgres_server.url()


@pytest.fixture(scope="session")
def postgres_template(postgres_server: PostgresServer,
                      tmp_path_factory: pytest.TempPathFactory) -> str:
    began = time.monotonic()
    url = postgres_server.create_database(_TEMPLATE)
    env = django_env(data_dir=tmp_path_factory.mktemp("migrate-data"), database_url=url)
    run_manage(["migrate", "--noinput"], env)
    _startup["postgres template (manage.py migrate)"] = time.monotonic() - began
    return _TEMPLATE


@pytest.fixture
def postgres_database_url(postgres_server: PostgresServer, postgres_template: str
                          ) -> Iterator[str]:
    name = f"test_{next(_database_numbers)}"
    url = postgres_server.create_database(name, template=postgres_template)
    yield url
    postgres_server.drop_database(name)


@pytest.fixture
def service_env(tmp_path: Path, postgres_database_url: str, redis_url: str) -> dict[str, str]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    return django_env(data_dir=data_dir, database_url=postgres_database_url,
                      redis_url=redis_url)


@pytest.fixture
def e2e_stack(tmp_path: Path, service_env: dict[str, str],
              redis_url: str) -> Iterator[ProcessStack]:
    flush(redis_url)  # nothing queued by an earlier test reaches this stack's workers
    stack = ProcessStack(service_env, tmp_path / "stack", redis_url=redis_url)
    try:
        yield stack
    finally:
        stack.stop_all()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _startup:
        terminalreporter.write_sep("-", "test services start-up")
        for what, seconds in _startup.items():
            terminalreporter.write_line(f"{what}: {seconds:.2f}s")
