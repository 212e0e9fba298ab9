"""Run Django in subprocesses pointed at real services, the way deployments run it.

The test process itself is configured by pytest-django once, at start-up, from
``config.test_settings`` (SQLite, in-memory channel layer). Code that must run against
PostgreSQL and Redis — ``migrate``, the row-lock and partial-unique-index behaviour of the
rooms services, several writers at once — runs here instead, in fresh interpreters whose
environment says so:

    env = django_env(data_dir=tmp_path, database_url=postgres_database_url, redis_url=redis_url)
    run_manage(["migrate", "--noinput"], env)
    out = run_script("from apps.rooms.models import Room; print(Room.objects.count())", env)
    procs = [start_script(code, env) for _ in range(2)]   # concurrent writers
    results = [finish(p) for p in procs]

Scripts run with ``django.setup()`` already done; by convention they print one JSON document on
their last line of output, which :func:`last_json` reads. Failures raise with the process's
output in the message.

Several processes of one deployment must share ``DJANGO_SECRET_KEY`` and
``CONFAB_FERNET_KEYS`` (sessions, encrypted API keys), so :func:`django_env` sets both
explicitly instead of letting each process generate its own in the data directory.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet

from tests.services.procs import orphan_guard

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_MODULE = "config.settings"
PRELUDE = "import django\ndjango.setup()\n"
# Variables of the test process that must not leak into a child's configuration.
_SCRUBBED = ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "CONFAB_DATA_DIR",
             "CONFAB_WORKSPACES_DIR", "CONFAB_ENV", "DJANGO_SECRET_KEY", "CONFAB_FERNET_KEYS")


def django_env(*, data_dir: Path | str, database_url: str | None = None,
               redis_url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a confab process: ``config.settings`` with ``CONFAB_ENV=test``, the
    given data directory, database and Redis (SQLite / in-memory layer when not given), shared
    secrets, unbuffered output. ``extra`` adds or overrides variables."""
    env = {key: value for key, value in os.environ.items() if key not in _SCRUBBED}
    env.update(
        DJANGO_SETTINGS_MODULE=SETTINGS_MODULE,
        CONFAB_ENV="test",
        CONFAB_DATA_DIR=str(data_dir),
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        CONFAB_FERNET_KEYS=Fernet.generate_key().decode(),
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    if database_url:
        env["DATABASE_URL"] = database_url
    if redis_url:
        env["REDIS_URL"] = redis_url
    env.update(extra)
    return env


def _run(command: list[str], env: dict[str, str], timeout: float,
         check: bool) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([*orphan_guard(), *command], env=env, cwd=ROOT, text=True,
                            capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(command[:4])} ... exited with {result.returncode}\n"
                             f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}")
    return result


def run_manage(args: list[str], env: dict[str, str], *, timeout: float = 120,
               check: bool = True) -> subprocess.CompletedProcess[str]:
    """``python manage.py ARGS`` in the project root with ``env``."""
    return _run([sys.executable, str(ROOT / "manage.py"), *args], env, timeout, check)


def run_code(code: str, env: dict[str, str], *, timeout: float = 120,
             check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run Python ``code`` in a fresh interpreter (Django not set up)."""
    return _run([sys.executable, "-c", code], env, timeout, check)


def run_script(code: str, env: dict[str, str], *, timeout: float = 120,
               check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run Python ``code`` after ``django.setup()`` in a fresh interpreter."""
    return run_code(PRELUDE + code, env, timeout=timeout, check=check)


def start_script(code: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """Start ``code`` (after ``django.setup()``) without waiting: for several concurrent
    writers. Collect it with :func:`finish`."""
    return subprocess.Popen([*orphan_guard(), sys.executable, "-c", PRELUDE + code], env=env,
                            cwd=ROOT, text=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen[str], *, timeout: float = 120) -> Any:
    """Wait for a :func:`start_script` process; check its exit code; return its last-line JSON
    (None if it printed nothing)."""
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        raise AssertionError(f"script timed out after {timeout}s\n{stdout}\n{stderr}") from None
    if proc.returncode != 0:
        raise AssertionError(f"script exited with {proc.returncode}\n--- stdout ---\n{stdout}\n"
                             f"--- stderr ---\n{stderr}")
    return _last_json(stdout)


def last_json(result: subprocess.CompletedProcess[str]) -> Any:
    """The JSON document a script printed on its last line of output."""
    return _last_json(result.stdout)


def _last_json(stdout: str) -> Any:
    lines = [line for line in stdout.splitlines() if line.strip()]
    return json.loads(lines[-1]) if lines else None
