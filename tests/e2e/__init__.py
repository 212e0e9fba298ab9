"""End-to-end tests: real Daphne, ``runworker`` and fakellm processes against PostgreSQL and
Redis, driven over real sockets (see :mod:`tests.e2e.harness`). Marked ``e2e``."""
