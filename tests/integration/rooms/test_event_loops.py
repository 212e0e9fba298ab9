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
from tests.services.django_proc import django_env, run_code, run_script

LOOPS = [("uvloop", "uvloop"), ("asyncio", "asyncio")]
REACTOR_LOOP = ("from twisted.internet import reactor\n"
                "print(type(reactor._asyncioEventloop).__module__.split('.')[0])\n")


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
    launch = ("import runpy, sys\nsys.argv = ['config.daphne', '--help']\ntry:\n"
              "    runpy.run_module('config.daphne', run_name='__main__')\n"
              "except SystemExit as exit:\n    assert exit.code == 0, exit.code\n")
    env = django_env(data_dir=tmp_path, CONFAB_EVENT_LOOP=name)
    result = run_code(launch + REACTOR_LOOP, env)
    assert result.stdout.startswith("usage: python -m config.daphne ")  # Daphne's parser,
    assert "--websocket_timeout" in result.stdout  # named as it was run
    assert result.stdout.strip().splitlines()[-1] == module
