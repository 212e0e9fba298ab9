"""Fixtures of the real-browser tests: a live confab and Debian's headless Chromium driving it.

- ``confab_server`` (package scope): confab started the way people start it, on a file SQLite
  database in a temporary ``CONFAB_DATA_DIR`` with the in-memory channel layer —
  ``manage.py migrate``, ``manage.py demo --json`` (``CONFAB_FAKELLM_URL`` pointing at the
  offline model's port), then ``manage.py serve --port P --fakellm-port F --fakellm-rate 40``
  (Daphne with the embedded run worker, and the fakellm server beside it), ready when
  ``/healthz`` and the model's ``/health`` answer. pytest-django's ``live_server`` has no
  WebSockets, so it is not used. ``confab_server.new_conversation()`` gives each test a
  conversation of its own in the demo room.
- ``browser`` (package scope): ``/usr/bin/chromium`` (``CONFAB_CHROMIUM`` overrides) launched by
  Playwright headless with ``--no-sandbox`` (CI runs as root) and the flags that stop background
  networking. Playwright's own browser download is never used. Missing Chromium fails the run
  in CI (``CI`` set) and skips the package elsewhere, saying how to install it.
- ``people`` (per test): ``people.room("alice", conversation_id)`` opens a fresh browser context
  for that persona, signed in with :func:`~tests.e2e.browser.live.login`, on the room page. When
  a test fails, every page it opened is saved (PNG and HTML) under ``tests/e2e/browser/artifacts/``
  (git-ignored).
- ``screenshot(page, name)``: saves ``artifacts/<name>.png``. Every artefact written is listed
  at the end of the run.

The package scope tears the browser and the server down before the next test package runs, so
Playwright's own event loop never overlaps another package's asyncio tests.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from tests.e2e.browser.live import (
    CHROMIUM,
    CHROMIUM_ARGS,
    FAKELLM_RATE,
    TIMEOUT_MS,
    ConfabServer,
    People,
    login,
    save_screenshot,
    written,
)
from tests.e2e.harness import ProcessStack, http_ok
from tests.services.django_proc import django_env, run_manage
from tests.services.procs import LOOPBACK, free_port

__all__ = ["login"]

expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="package")
def confab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfabServer]:
    workdir = tmp_path_factory.mktemp("browser-confab")
    data_dir = workdir / "data"
    data_dir.mkdir()
    migrated = False
    for attempt in range(3):  # a port can be taken between picking it and binding it
        port, fakellm_port = free_port(), free_port()
        # Private network allowed: the MCP sign-in test's OAuth server listens on loopback.
        env = django_env(data_dir=data_dir, CONFAB_ALLOW_PRIVATE_NETWORK="true",
                         CONFAB_FAKELLM_URL=f"http://{LOOPBACK}:{fakellm_port}")
        if not migrated:
            run_manage(["migrate", "--no-input", "-v0"], env)
            migrated = True
        demo = json.loads(run_manage(["demo", "--json"], env).stdout)
        stack = ProcessStack(env, workdir / f"stack{attempt}")
        url = f"http://{LOOPBACK}:{port}"
        llm = f"http://{LOOPBACK}:{fakellm_port}"
        try:
            stack.start("serve", [
                sys.executable, "manage.py", "serve", "--host", LOOPBACK, "--port", str(port),
                "--fakellm-port", str(fakellm_port), "--fakellm-rate", str(FAKELLM_RATE)],
                port=port, ready=lambda _p, url=url, llm=llm: (
                    http_ok(url + "/healthz") and http_ok(llm + "/health")))
        except RuntimeError as error:
            stack.stop_all()
            if "already in use" in str(error) or "Errno 98" in str(error):
                continue
            raise
        break
    else:
        raise RuntimeError("manage.py serve could not bind free ports (3 attempts)")
    print(f"confab serving on {url} (logs: {stack.logs})")
    try:
        yield ConfabServer(url=url, stack=stack, env=env, demo=demo)
    finally:
        stack.stop_all()


@pytest.fixture(scope="package")
def playwright_driver() -> Iterator[Playwright]:
    if not os.access(CHROMIUM, os.X_OK):
        message = (f"{CHROMIUM} is missing: install Debian's chromium (`make system-deps` as "
                   "root does) or point CONFAB_CHROMIUM at a Chromium")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="package")
def browser(playwright_driver: Playwright) -> Iterator[Browser]:
    browser = playwright_driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                headless=True)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture(scope="package")
def storage_states() -> dict[str, Any]:
    """Each persona's signed-in cookies, filled on first use: one login per person."""
    return {}


@pytest.fixture
def people(request: pytest.FixtureRequest, confab_server: ConfabServer, browser: Browser,
           storage_states: dict[str, Any]) -> Iterator[People]:
    crowd = People(confab_server, browser, storage_states, request.node.name)
    try:
        yield crowd
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            crowd.save_failure_artifacts()
        crowd.close()


@pytest.fixture
def screenshot() -> Callable[[Page, str], Path]:
    """``screenshot(page, "name")`` saves ``artifacts/name.png`` and returns its path."""
    return save_screenshot


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if written:
        terminalreporter.write_sep("-", "browser test artefacts")
        for path in written:
            terminalreporter.write_line(str(path))
