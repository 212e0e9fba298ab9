"""The run workers' event loop is the one ``CONFAB_EVENT_LOOP`` names (uvloop by default); any
other name is refused with the names it may be. (A real runworker on each loop:
test_worker_shutdown.py.)"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from apps.common.event_loops import new_event_loop


@pytest.mark.parametrize(("name", "module"), [("uvloop", "uvloop"), ("asyncio", "asyncio")])
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
