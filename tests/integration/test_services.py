"""The real services the server tests use work for real (tests/services, tests/e2e/harness.py).

Redis: a channels-redis round trip between two layer instances (as between two processes).
PostgreSQL: psycopg connects; ``manage.py migrate`` builds the schema in a subprocess, with the
partial unique index that allows one active run per conversation; two processes racing to start
a run get one run; two processes allocating ``seq`` numbers at once get every number exactly
once; the ORM test suite in ``tests/postgres`` passes in a pytest run pointed at PostgreSQL.
The e2e harness starts, kills and stops real processes without leaving any behind.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import psutil
import psycopg
import pytest
import redis
from channels_redis.core import RedisChannelLayer

from tests.e2e.harness import ProcessStack, http_ok
from tests.services.django_proc import (
    ROOT,
    django_env,
    finish,
    last_json,
    run_manage,
    run_script,
    start_script,
)
from tests.services.postgres import PostgresServer
from tests.services.procs import orphan_guard

# -- Redis ------------------------------------------------------------------------------------


def test_redis_answers_on_loopback(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.ping()
        client.set("confab:probe", "1")
        assert client.get("confab:probe") == b"1"
        info = client.info("server")
        assert int(info["redis_version"].split(".")[0]) >= 6  # channels-redis needs >= 5
        assert client.config_get("save")["save"] == ""  # no persistence
    finally:
        client.close()
    assert redis_url.startswith("redis://127.0.0.1:")


async def test_channel_layer_round_trip_between_two_layers(redis_url: str) -> None:
    """Two RedisChannelLayer instances share nothing but Redis, like two server processes:
    a group message and a named-channel message sent by one reach the other."""
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    config = {"hosts": [redis_url], "prefix": prefix}
    sender, receiver = RedisChannelLayer(**config), RedisChannelLayer(**config)
    try:
        channel = await receiver.new_channel()
        await receiver.group_add("conversation-1", channel)
        await sender.group_send("conversation-1", {"type": "conv.event", "seq": 7,
                                                   "event": {"kind": "message_delta"}})
        got = await receiver.receive(channel)
        assert got == {"type": "conv.event", "seq": 7, "event": {"kind": "message_delta"}}

        await sender.send("agent-runs", {"type": "run.start", "run_id": 42})
        assert await receiver.receive("agent-runs") == {"type": "run.start", "run_id": 42}
    finally:
        await sender.close_pools()
        await receiver.close_pools()


# -- PostgreSQL -------------------------------------------------------------------------------


def test_postgres_connects_with_psycopg(postgres_server: PostgresServer,
                                        postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        version, address, database = conn.execute(
            "SELECT current_setting('server_version_num')::int, inet_server_addr()::text,"
            " current_database()").fetchone()
    assert version >= 160000
    assert address.split("/")[0] == "127.0.0.1"
    assert database == "confab"
    # PostgreSQL refuses root: when the tests run as root, the server runs as someone else.
    owner = psutil.Process(postgres_server.proc.pid).uids().real
    assert owner != 0


def test_migrate_makes_the_one_active_run_index(postgres_database_url: str,
                                                service_env: dict[str, str]) -> None:
    """``manage.py migrate`` (run on the template, checked again here) leaves nothing
    unapplied, and the partial unique index is really in PostgreSQL."""
    run_manage(["migrate", "--check", "--noinput"], service_env)
    with psycopg.connect(postgres_database_url) as conn:
        row = conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'rooms_run'"
                           " AND indexname = 'one_active_run_per_conversation'").fetchone()
    assert row is not None, "the partial unique index is missing"
    indexdef = row[0]
    assert indexdef.startswith("CREATE UNIQUE INDEX one_active_run_per_conversation")
    assert "(conversation_id)" in indexdef and " WHERE " in indexdef
    for status in ("queued", "running", "awaiting_approval", "awaiting_input"):
        assert status in indexdef


SETUP_CONVERSATION = """
import json
from apps.accounts.models import Team
from apps.rooms.models import Conversation, Room
team = Team.objects.create(name="Race", slug="race")
room = Room.objects.create(team=team, name="room")
print(json.dumps(Conversation.objects.create(room=room).pk))
"""

# Both racers wait for the same file before they write, so their writes really overlap.
BARRIER = """
import json, os, time
from pathlib import Path
conversation_id = int(os.environ["CONVERSATION"])
go = Path(os.environ["GO_FILE"])
Path(os.environ["READY_FILE"]).touch()
while not go.exists():
    time.sleep(0.001)
"""

START_RUN = BARRIER + """
from django.db import IntegrityError, transaction
from apps.rooms.models import Run
try:
    with transaction.atomic():
        run = Run.objects.create(conversation_id=conversation_id, status="queued")
    print(json.dumps({"run": run.pk}))
except IntegrityError as error:
    print(json.dumps({"refused": type(error.__cause__).__name__}))
"""

ALLOCATE_SEQS = BARRIER + """
from apps.rooms.services.events import events_append
seqs = []
for i in range(int(os.environ["EVENTS"])):
    rows = events_append(conversation_id, [("probe", {"kind": "probe", "i": i})])
    seqs.extend(row.seq for row in rows)
print(json.dumps(seqs))
"""


def _race(code: str, env: dict[str, str], tmp_path, conversation_id: int, racers: int = 2,
          **extra: str) -> list:
    """Start ``racers`` processes running ``code``; release them together; their results."""
    go = tmp_path / "go"
    ready = [tmp_path / f"ready{i}" for i in range(racers)]
    procs = [start_script(code, {**env, **extra, "CONVERSATION": str(conversation_id),
                                 "GO_FILE": str(go), "READY_FILE": str(ready[i])})
             for i in range(racers)]
    deadline = time.monotonic() + 60
    while not all(path.exists() for path in ready):
        assert time.monotonic() < deadline, "racers did not start"
        assert all(proc.poll() is None for proc in procs), [finish(p) for p in procs]
        time.sleep(0.01)
    go.touch()
    return [finish(proc) for proc in procs]


def test_two_processes_cannot_start_two_runs(service_env: dict[str, str], tmp_path) -> None:
    """The database, not the application, keeps one active run per conversation."""
    conversation_id = last_json(run_script(SETUP_CONVERSATION, service_env))
    results = _race(START_RUN, service_env, tmp_path, conversation_id)
    started = [r for r in results if "run" in r]
    refused = [r for r in results if "refused" in r]
    assert len(started) == 1 and refused == [{"refused": "UniqueViolation"}], results


def test_seq_allocation_from_two_processes(service_env: dict[str, str], tmp_path,
                                           postgres_database_url: str) -> None:
    """Two writers appending events at once get every seq exactly once: no duplicate, no gap."""
    conversation_id = last_json(run_script(SETUP_CONVERSATION, service_env))
    events = 60
    first, second = _race(ALLOCATE_SEQS, service_env, tmp_path, conversation_id,
                          EVENTS=str(events))
    assert sorted(first + second) == list(range(1, 2 * events + 1))
    assert first == sorted(first) and second == sorted(second)
    with psycopg.connect(postgres_database_url) as conn:
        stored = [seq for (seq,) in conn.execute(
            "SELECT seq FROM rooms_conversationevent WHERE conversation_id = %s ORDER BY seq",
            (conversation_id,))]
        (last_seq,) = conn.execute("SELECT last_seq FROM rooms_conversation WHERE id = %s",
                                   (conversation_id,)).fetchone()
    assert stored == list(range(1, 2 * events + 1))
    assert last_seq == 2 * events


def test_orm_tests_run_on_postgres(postgres_url: str, redis_url: str, tmp_path) -> None:
    """``tests/postgres`` (skipped in this SQLite-configured run) passes in a pytest run whose
    Django database is PostgreSQL: pytest-django creates ``test_confab`` there and migrates."""
    env = django_env(data_dir=tmp_path, database_url=postgres_url, redis_url=redis_url,
                     DJANGO_SETTINGS_MODULE="config.test_settings")
    result = subprocess.run(
        [*orphan_guard(), sys.executable, "-m", "pytest", "tests/postgres", "-q",
         "-p", "no:cacheprovider", "-W", "error::pytest.PytestUnraisableExceptionWarning"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "passed" in summary and "skipped" not in summary, summary


# -- the e2e process harness ------------------------------------------------------------------


def test_harness_kills_and_stops_without_orphans(tmp_path, redis_url: str) -> None:
    """Generic processes: readiness by a check, kill -9 on demand, nothing left at stop."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    sleeper = [sys.executable, "-c",
               "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
               "'import time; time.sleep(600)']); print('up', flush=True); time.sleep(600)"]
    with ProcessStack(env, tmp_path, redis_url=redis_url) as stack:
        first = stack.start("first", sleeper, ready=lambda p: "up" in p.log_text())
        second = stack.start("second", sleeper, ready=lambda p: "up" in p.log_text())
        children = psutil.Process(first.pid).children(recursive=True)
        assert children, "the sleeper's child did not start"
        assert stack.kill(first) == -signal.SIGKILL
        psutil.wait_procs(children, timeout=5)
        assert not any(child.is_running() and child.status() != psutil.STATUS_ZOMBIE
                       for child in children), "kill left the process group's children"
        assert second.alive()
        with pytest.raises(RuntimeError, match="exited with code 3"):
            stack.start("broken", [sys.executable, "-c", "import sys; sys.exit(3)"],
                        ready=lambda p: False)
    assert not second.alive()


@pytest.mark.e2e
def test_stack_serves_with_postgres_and_redis(e2e_stack: ProcessStack) -> None:
    """Two Daphne processes, a run worker and fakellm start against PostgreSQL and Redis,
    answer, survive the kill of one of them, and all stop at teardown."""
    first, second = e2e_stack.start_daphne(), e2e_stack.start_daphne()
    worker = e2e_stack.start_worker()
    llm = e2e_stack.start_fakellm(rate=50)
    assert http_ok(first.url + "/healthz") and http_ok(second.url + "/healthz")
    assert http_ok(llm.url + "/health")
    with socket.create_connection(("127.0.0.1", second.port), timeout=2):
        pass
    assert e2e_stack.kill(worker) == -signal.SIGKILL
    assert not worker.alive() and first.alive() and second.alive(), e2e_stack.describe()
    assert http_ok(first.url + "/healthz")
    e2e_stack.stop_all()
    assert not any(p.alive() for p in e2e_stack.processes)
