"""The providers' network code runs on either event loop a confab process may use
(:mod:`apps.common.event_loops`): every test here runs once on asyncio's loop and once on
uvloop's (pytest-asyncio's ``pytest_asyncio_loop_factories`` hook, which only this
directory's tests see)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest
import uvloop


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item
                                  ) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
