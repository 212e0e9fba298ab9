"""`manage.py demo` and `manage.py serve` as people run them: the embedded default (SQLite,
in-memory layer, run worker inside the server, fakellm beside it), stopped by SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path

import psutil
import pytest
import websockets

from tests.e2e.harness import ProcessStack, http_ok
from tests.services.django_proc import django_env, run_manage, run_script
from tests.services.procs import free_port, wait_until

pytestmark = pytest.mark.e2e


def test_demo_json_has_exactly_the_documented_shape(tmp_path: Path) -> None:
    env = django_env(data_dir=tmp_path, CONFAB_FAKELLM_URL="http://127.0.0.1:9")
    run_manage(["migrate", "-v0"], env)
    first = json.loads(run_manage(["demo", "--json"], env).stdout)
    again = json.loads(run_manage(["demo", "--json"], env).stdout)
    assert set(first) == {"team", "room", "conversation", "conversations", "users", "admin"}
    assert {c["agent_mode"] for c in first["conversations"]} == {"always", "mention"}
    assert set(first["users"]) == {"alice", "bob", "carol"}
    for person in first["users"].values():
        assert set(person) == {"id", "username", "password", "token"}
        assert person["token"].startswith("cf_")
    assert set(first["admin"]) == {"username", "password"}
    # idempotent: the same objects, fresh credentials
    assert [again[k]["id"] for k in ("team", "room", "conversation")] == \
        [first[k]["id"] for k in ("team", "room", "conversation")]
    assert again["users"]["alice"]["token"] != first["users"]["alice"]["token"]
    assert again["admin"]["password"] != first["admin"]["password"]
    password = again["admin"]["password"]
    admin = run_script("from apps.accounts.models import User\n"
                       "admin = User.objects.get(username='admin')\n"
                       f"print(admin.is_staff, admin.check_password({password!r}))", env)
    assert admin.stdout.split() == ["True", "True"]  # the printed password signs in


def test_serve_runs_a_conversation_and_stops_everything_on_sigterm(tmp_path: Path) -> None:
    port, fakellm_port = free_port(), free_port()
    env = django_env(data_dir=tmp_path, CONFAB_FAKELLM_URL=f"http://127.0.0.1:{fakellm_port}")
    run_manage(["migrate", "-v0"], env)
    demo = json.loads(run_manage(["demo", "--json"], env).stdout)
    with ProcessStack(env, tmp_path / "stack") as stack:
        serve = stack.start("serve", [
            sys.executable, "manage.py", "serve", "--port", str(port), "--fakellm-port",
            str(fakellm_port), "--fakellm-rate", "0"],
            ready=lambda p: "confab is serving on" in p.log_text(), port=port)
        # what a script waiting for that line does next: the port answers at once, no retry
        assert http_ok(f"http://127.0.0.1:{port}/healthz")
        assert http_ok(f"http://127.0.0.1:{fakellm_port}/health")
        text = asyncio.run(_one_run(port, demo))
        assert text == "served"
        children = psutil.Process(serve.pid).children(recursive=True)
        assert children  # the offline model server, at least
        os.kill(serve.pid, signal.SIGTERM)  # to serve alone: it must stop the rest itself
        assert serve.proc.wait(timeout=20) is not None
        wait_until(lambda: not any(_alive(c) for c in children), timeout=15,
                   what="serve's children to exit")
        assert not http_ok(f"http://127.0.0.1:{fakellm_port}/health")


def test_serve_on_a_taken_port_fails_and_never_says_it_serves(tmp_path: Path) -> None:
    env = django_env(data_dir=tmp_path)
    run_manage(["migrate", "-v0"], env)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_manage(["serve", "--port", str(port), "--fakellm-port", "0"], env,
                          timeout=60, check=False)
    assert done.returncode != 0
    assert f"could not listen on 127.0.0.1:{port}" in done.stderr
    assert "serving" not in done.stdout  # a script waiting for that line is not misled


async def _one_run(port: int, demo: dict) -> str:
    url = f"ws://127.0.0.1:{port}/ws/conversations/{demo['conversation']['id']}/"
    token = demo["users"]["bob"]["token"]
    async with websockets.connect(url, additional_headers={
            "Authorization": f"Bearer {token}"}) as ws:
        assert json.loads(await ws.recv())["type"] == "state"
        await ws.send(json.dumps({"type": "send", "client_id": "s1", "text": json.dumps(
            {"script": [{"text": "served"}]})}))
        text = ""
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
            event = frame.get("event", {})
            if event.get("kind") == "text_delta":
                text += event["text"]
            if event.get("kind") == "run_ended":
                assert event["status"] == "completed"
                return text


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
