"""`make demo`'s configuration serves the site's own error pages (issue 14): a missing object is
the plain 404 page, never Django's debug page with the URL patterns, unless the person asks for
debug with ``DJANGO_DEBUG=1``; static files are served all the same."""

from __future__ import annotations

import http.cookiejar
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.harness import ProcessStack, http_ok
from tests.services.django_proc import django_env, run_manage, run_script
from tests.services.procs import free_port

pytestmark = pytest.mark.e2e

PLAIN_404 = "There is nothing here, or nothing you can see."
DEBUG_PAGE = ("Using the URLconf", "DEBUG = True", "technical_404")


def demo_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment `make demo` gives the server: development, and no DJANGO_DEBUG."""
    env = django_env(data_dir=data_dir, CONFAB_ENV="development")
    env.pop("DJANGO_DEBUG", None)
    return {**env, **extra}


class Browser:
    """Cookies, a CSRF token, and no proxies from the environment."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                                  urllib.request.HTTPCookieProcessor(self.cookies))

    def get(self, path: str) -> tuple[int, str]:
        return self._open(urllib.request.Request(self.origin + path))

    def sign_in(self, username: str, password: str) -> None:
        _, page = self.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token, page[:500]
        data = urllib.parse.urlencode({"csrfmiddlewaretoken": token.group(1),
                                       "username": username, "password": password}).encode()
        status, _ = self._open(urllib.request.Request(self.origin + "/accounts/login/", data))
        assert status == 200 and any(c.name == "sessionid" for c in self.cookies)

    def _open(self, request: urllib.request.Request) -> tuple[int, str]:
        try:
            with self.opener.open(request, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


def test_the_demo_shows_the_plain_404_page_and_still_serves_static_files(tmp_path: Path) -> None:
    env = demo_env(tmp_path)
    run_manage(["migrate", "-v0"], env)
    demo = json.loads(run_manage(["demo", "--json"], env).stdout)
    port = free_port()
    with ProcessStack(env, tmp_path / "stack") as stack:
        stack.start("serve", [sys.executable, "manage.py", "serve", "--port", str(port),
                              "--fakellm-port", "0"],
                    ready=lambda p: http_ok(f"http://127.0.0.1:{port}/healthz"), port=port)
        browser = Browser(f"http://127.0.0.1:{port}")
        browser.sign_in("alice", demo["users"]["alice"]["password"])
        for missing in ("/rooms/999999/", "/conversations/999999/", "/no/such/page/"):
            status, page = browser.get(missing)
            assert status == 404, missing
            assert PLAIN_404 in page and not any(mark in page for mark in DEBUG_PAGE), missing
        status, css = browser.get("/static/common/site.css")
        assert status == 200 and "--muted" in css
        for missing in ("/static/nope.js", "/static/rooms/"):
            assert browser.get(missing)[0] == 404, missing  # not a 500


def test_debug_is_off_unless_asked_for(tmp_path: Path) -> None:
    code = "from django.conf import settings; print(settings.DEBUG)"
    assert run_script(code, demo_env(tmp_path)).stdout.split()[-1] == "False"
    assert run_script(code, demo_env(tmp_path, DJANGO_DEBUG="1")).stdout.split()[-1] == "True"
