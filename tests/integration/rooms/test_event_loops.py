"""The run workers' and Daphne's event loop is the one ``CONFAB_EVENT_LOOP`` names (uvloop by
default); any other name is refused with the names it may be. (A real runworker on each loop:
test_worker_shutdown.py; Daphne serves every e2e test from ``python -m config.daphne``.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from apps.common.event_loops import new_event_loop
from tests.services.django_proc import django_env, run_code, run_manage, run_script

LOOPS = [("uvloop", "uvloop"), ("asyncio", "asyncio")]
REACTOR_LOOP = """
import daphne.server
from twisted.internet import reactor
assert reactor._asyncioEventloop is not daphne.server.twisted_loop  # not Daphne's own loop
print(type(reactor._asyncioEventloop).__module__.split(".")[0])
"""


@pytest.mark.parametrize(("name", "module"), LOOPS)
def test_the_setting_names_the_loop(name: str, module: str) -> None:
    with override_settings(CONFAB={**settings.CONFAB, "EVENT_LOOP": name}):
        loop = new_event_loop()
    try:
        assert type(loop).__module__.split(".")[0] == module
    finally:
        loop.close()


def test_another_name_is_refused_with_the_names_it_may_be() -> None:
    with (override_settings(CONFAB={**settings.CONFAB, "EVENT_LOOP": "trio"}),
          pytest.raises(ImproperlyConfigured, match="'trio'; it may be uvloop or asyncio")):
        new_event_loop()


@pytest.mark.parametrize(("name", "module"), LOOPS)
def test_django_puts_daphnes_reactor_on_the_named_loop(tmp_path: Path, name: str,
                                                       module: str) -> None:
    """``manage.py serve``'s way: the app registry imports ``apps.common`` before ``daphne``,
    whose import would install the reactor over asyncio's loop."""
    env = django_env(data_dir=tmp_path, CONFAB_EVENT_LOOP=name)
    assert run_script(REACTOR_LOOP, env).stdout.strip() == module


@pytest.mark.parametrize(("name", "module"), LOOPS)
def test_config_daphne_runs_daphnes_command_line_on_the_named_loop(
        tmp_path: Path, name: str, module: str) -> None:
    """``python -m config.daphne``, asked for its help: Daphne's own parser answers, on the
    reactor the launcher installed before Daphne was imported."""
    env = django_env(data_dir=tmp_path, CONFAB_EVENT_LOOP=name)
    result = run_code(launching("--help") + REACTOR_LOOP, env)
    assert result.stdout.startswith("usage: python -m config.daphne ")  # Daphne's parser,
    assert "--websocket_timeout" in result.stdout  # named as it was run
    assert result.stdout.strip().splitlines()[-1] == module


def test_daphnes_thread_pool_has_asgi_threads_threads(tmp_path: Path) -> None:
    """Daphne's setting for its loop's pool (``daphne.server``) holds for the loop it runs on:
    eight calls to the default executor share the one thread ``ASGI_THREADS=1`` allows."""
    env = django_env(data_dir=tmp_path, ASGI_THREADS="1")
    threads = run_script("""
import asyncio, threading, time
from twisted.internet import reactor

def ident():
    time.sleep(0.02)
    return threading.get_ident()

async def calls():
    loop = asyncio.get_running_loop()
    return await asyncio.gather(*(loop.run_in_executor(None, ident) for _ in range(8)))

print(len(set(reactor._asyncioEventloop.run_until_complete(calls()))))
""", env)
    assert threads.stdout.strip() == "1"


def test_a_loop_that_cannot_be_had_is_refused_where_one_would_run(tmp_path: Path) -> None:
    """``manage.py serve`` and ``python -m config.daphne`` say why and exit 1; a command that
    runs no loop (``check``) goes on, as it did before Daphne ran on the setting's loop."""
    env = django_env(data_dir=tmp_path, CONFAB_EVENT_LOOP="trio")
    why = "CONFAB_EVENT_LOOP is 'trio'; it may be uvloop or asyncio"
    assert run_manage(["check"], env).returncode == 0
    serve = run_manage(["serve", "--fakellm-port", "0"], env, check=False)
    assert serve.returncode == 1
    assert f"CommandError: {why}" in serve.stderr
    daphne = run_code(launching("config.asgi:application"), env, check=False)
    assert daphne.returncode == 1
    assert daphne.stderr.strip() == f"python -m config.daphne: {why}"


def launching(*args: str) -> str:
    """Code that runs ``python -m config.daphne ARGS`` and goes on after it exits 0."""
    return (f"import runpy, sys\nsys.argv = ['config.daphne', *{list(args)!r}]\ntry:\n"
            "    runpy.run_module('config.daphne', run_name='__main__')\n"
            "except SystemExit as exit:\n    if exit.code not in (0, None): raise\n")
