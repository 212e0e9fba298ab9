"""Shared test set-up: where the recorded provider streams and bug cases live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CONFAB_SHARED", ROOT.parent / "shared"))
FIXTURES = SHARED / "fixtures" / "providers"
CASES = SHARED / "cases" / "provider"

# Real Redis and PostgreSQL (started on first use), Django subprocesses, the e2e process stack.
pytest_plugins = ["tests.services.fixtures"]


def pytest_sessionstart(session: pytest.Session) -> None:
    """The fixture and case tests are parametrized from ../shared at collection time; without it
    they would collect nothing and pass silently, so refuse to run instead."""
    for path in (FIXTURES, CASES):
        if not path.is_dir():
            raise pytest.UsageError(
                f"missing {path}: clone the repository with ../shared beside it "
                "(or set CONFAB_SHARED)"
            )
