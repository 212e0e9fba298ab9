"""The composer's model and reasoning controls in a real browser (issue 17): the enabled models,
for the chosen one only the controls its configuration declares, a change seen by everyone in
the room and used by the next run."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, WebSocketRoute, expect

from tests.e2e.browser.live import ConfabServer, People
from tests.e2e.browser.room import Room
from tests.services.django_proc import last_json, run_script

pytestmark = pytest.mark.e2e


def _add_thinker(server: ConfabServer) -> tuple[int, str]:
    """A model of the offline provider declaring three controls, with a default budget
    (in the server's database); its id and name. Named afresh per test: the server is shared."""
    name = f"Thinker {os.urandom(3).hex()}"
    code = (
        "import json\n"
        "from apps.integrations.models import ModelConfig\n"
        "offline = ModelConfig.objects.get(model_id='confab-offline')\n"
        f"m = ModelConfig.objects.create(provider=offline.provider, model_id={name!r},\n"
        f"    display_name={name!r}, extend_params=['effort', 'enabled_search',\n"
        "    'thinking_budget'], default_reasoning={'thinking_budget': 4096})\n"
        "print(json.dumps({'id': m.pk}))\n")
    return last_json(run_script(code, server.env))["id"], name


def test_the_composer_shows_the_chosen_models_controls_and_the_next_run_uses_them(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    thinker, name = _add_thinker(confab_server)
    conversation = confab_server.new_conversation(request.node.name)
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    choice = alice.page.locator("#model-choice")
    expect(choice.locator("option:checked")).to_have_text("Offline scripted model")
    expect(choice.locator("option", has_text=name)).to_have_count(1)
    controls = alice.page.locator("#model-settings [data-control]")
    expect(controls).to_have_count(0)  # the offline model declares none

    choice.select_option(label=name)
    for room in (alice, bob):
        expect(room.page.locator("#model-choice")).to_have_value(str(thinker))
        expect(room.page.locator("#model-settings [data-control]")).to_have_count(3)
    effort = bob.page.locator('#model-settings select[data-control="effort"]')
    expect(effort.locator("option").first).to_have_text("default")
    budget = bob.page.locator('#model-settings input[data-control="thinking_budget"]')
    expect(budget).to_have_attribute("placeholder", "default (4096)")
    expect(bob.page.get_by_label("Web search")).not_to_be_checked()
    expect(bob.page.locator('[data-control="thinking_type"]')).to_have_count(0)

    effort.select_option("high")
    bob.page.get_by_label("Web search").check()
    alice_effort = alice.page.locator('#model-settings select[data-control="effort"]')
    expect(alice_effort).to_have_value("high")
    expect(alice.page.get_by_label("Web search")).to_be_checked()
    expect(alice.page.locator("#notices")).to_contain_text(
        "Bob changed the model settings: they apply from the next run.")

    alice.send("hello")
    expect(alice.run_status).to_have_text("Completed")
    exported = alice.page.request.get(f"/api/conversations/{conversation}/export.json")
    runs = json.loads(exported.body())["runs"]
    assert [(r["model"], r["reasoning"]) for r in runs] == [
        (name, {"effort": "high", "thinking_budget": 4096, "enabled_search": True})]


class HeldEchoes:
    """A page's room socket through Playwright's WebSocket routing, so a test decides when the
    page gets the server's ``settings_changed`` frames: while ``holding``, they wait in
    ``held`` (oldest first) until :meth:`release`; every other frame passes at once. With
    ``lose_next_configure`` the page's next ``configure`` never reaches the server and the
    connection drops (a half-open socket's end); ``to_server`` sends a frame of the test's."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.holding = False
        self.lose_next_configure = False
        self.held: list[str | bytes] = []
        self.connections = 0
        self.route: WebSocketRoute | None = None
        self.server: WebSocketRoute | None = None
        page.route_web_socket(re.compile(r"/ws/"), self._connect)

    def _connect(self, route: WebSocketRoute) -> None:
        self.connections += 1
        self.route, self.server = route, route.connect_to_server()
        self.server.on_message(self._from_server)
        route.on_message(self._from_page)

    def _from_server(self, message: str | bytes) -> None:
        if self.holding and '"settings_changed"' in str(message):
            self.held.append(message)
        elif self.route is not None:
            self.route.send(message)

    def _from_page(self, message: str | bytes) -> None:
        assert self.route is not None and self.server is not None
        if self.lose_next_configure and '"configure"' in str(message):
            self.lose_next_configure = False
            self.route.close()
        else:
            self.server.send(message)

    def to_server(self, frame: dict[str, Any]) -> None:
        assert self.server is not None
        self.server.send(json.dumps(frame))

    def wait_held(self, count: int, timeout_s: float = 10.0) -> None:
        """Until ``count`` frames are held (Playwright delivers them while the page waits)."""
        self._wait(lambda: len(self.held) >= count, f"{count} held frames", timeout_s)

    def wait_connections(self, count: int, timeout_s: float = 10.0) -> None:
        self._wait(lambda: self.connections >= count, f"{count} connections", timeout_s)

    def _wait(self, done: Callable[[], bool], what: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, f"no {what} within {timeout_s} s"
            self.page.wait_for_timeout(20)

    def release(self, count: int | None = None) -> None:
        """Pass on the ``count`` oldest held frames (all of them when None), and return once
        the page has drawn after them."""
        assert self.route is not None
        count = len(self.held) if count is None else count
        for message in self.held[:count]:
            self.route.send(message)
        del self.held[:count]
        drawn(self.page)


def drawn(page: Page) -> None:
    """Return once the page has handled what reached it so far and drawn a frame after it."""
    page.evaluate("new Promise((done) => requestAnimationFrame(() => setTimeout(done, 20)))")


def _thinker_in_the_room(confab_server: ConfabServer, people: People, name: str
                         ) -> tuple[HeldEchoes, Room, Room]:
    """Alice's and Bob's pages (Bob's socket routed through :class:`HeldEchoes`) on a new
    conversation whose model is a fresh Thinker."""
    _, model = _add_thinker(confab_server)
    conversation = confab_server.new_conversation(name)
    echoes = HeldEchoes(people.page("bob"))
    alice, bob = people.room("alice", conversation), people.room("bob", conversation)
    alice.page.locator("#model-choice").select_option(label=model)
    expect(bob.page.locator("#model-settings [data-control]")).to_have_count(3)
    return echoes, alice, bob


def _tick_after_effort_unechoed(echoes: HeldEchoes, bob: Room) -> Locator:
    """Bob picks effort "high", then ticks "Web search", both echoes held; the box."""
    echoes.holding = True
    _effort(bob).select_option("high")
    echoes.wait_held(1)
    search = bob.page.get_by_label("Web search")
    search.check()
    echoes.wait_held(2)
    return search


def _effort(room: Room) -> Locator:
    return room.page.locator('#model-settings select[data-control="effort"]')


def _budget(room: Room) -> Locator:
    return room.page.locator('#model-settings input[data-control="thinking_budget"]')


def test_an_earlier_echo_does_not_undo_a_later_change(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    """Bob picks an effort, then ticks "Web search": the echo of the effort arriving after the
    tick leaves the box ticked, and his next change still carries it. A refused change puts
    the server's settings back."""
    echoes, alice, bob = _thinker_in_the_room(confab_server, people, request.node.name)
    search = _tick_after_effort_unechoed(echoes, bob)
    echoes.release(1)  # the effort's echo, sent before the server had the tick
    expect(search).to_be_checked()

    _budget(bob).fill("8192")
    _budget(bob).press("Tab")  # the change event
    expect(_budget(alice)).to_have_value("8192")
    expect(alice.page.get_by_label("Web search")).to_be_checked()  # not sent undone
    expect(_effort(alice)).to_have_value("high")

    echoes.holding = False
    echoes.release()
    expect(search).to_be_checked()
    expect(_budget(bob)).to_have_value("8192")

    _budget(bob).fill("2000000")  # past what ReasoningParams takes: invalid, nothing stored
    _budget(bob).press("Tab")
    expect(bob.page.locator("#notices")).to_contain_text("thinking_budget")
    expect(_budget(bob)).to_have_value("8192")
    expect(search).to_be_checked()


def test_a_change_undone_before_its_echo_stays_undone(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    """Bob unticks "Web search" and ticks it again before the untick's echo: the settings then
    equal his last choice before its own echo came, and the untick's echo must not untick it."""
    echoes, alice, bob = _thinker_in_the_room(confab_server, people, request.node.name)
    search = bob.page.get_by_label("Web search")
    search.check()
    expect(alice.page.get_by_label("Web search")).to_be_checked()
    echoes.holding = True
    search.uncheck()
    echoes.wait_held(1)
    search.check()
    echoes.wait_held(2)
    echoes.release(1)  # the untick's echo
    expect(search).to_be_checked()
    _effort(bob).select_option("high")  # sends the box as shown
    expect(_effort(alice)).to_have_value("high")
    expect(alice.page.get_by_label("Web search")).to_be_checked()


def test_echoes_landing_before_one_drawing_are_each_heard(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    """Bob ticks "Web search", then Alice picks an effort; both echoes reach Bob's page
    before it draws (a background tab draws every 150 ms). His page must take his echo as
    his, and go on showing everyone's later changes."""
    echoes, alice, bob = _thinker_in_the_room(confab_server, people, request.node.name)
    echoes.holding = True
    bob.page.get_by_label("Web search").check()
    echoes.wait_held(1)
    _effort(alice).select_option("high")
    echoes.wait_held(2)
    bob.page.evaluate("Object.defineProperty(document, 'hidden', {get: () => true})")
    echoes.holding = False
    echoes.release()  # both in one go
    _budget(alice).fill("8192")
    _budget(alice).press("Tab")
    expect(_effort(bob)).to_have_value("high")
    expect(_budget(bob)).to_have_value("8192")
    expect(bob.page.get_by_label("Web search")).to_be_checked()


def test_a_change_lost_with_its_socket_goes_back_on_reconnecting(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    """Bob's tick leaves in a socket that dies before the server has it: the reconnected page
    shows the stored settings (the tick undone) and everyone's changes after it."""
    echoes, alice, bob = _thinker_in_the_room(confab_server, people, request.node.name)
    echoes.lose_next_configure = True
    search = bob.page.get_by_label("Web search")
    search.check()
    echoes.wait_connections(2)
    expect(search).not_to_be_checked()
    _effort(alice).select_option("high")
    expect(_effort(bob)).to_have_value("high")
    expect(alice.page.get_by_label("Web search")).not_to_be_checked()  # never stored


def test_another_frames_refusal_keeps_a_change_waiting_for_its_echo(
        confab_server: ConfabServer, people: People, request: pytest.FixtureRequest) -> None:
    """An error that refuses another frame (a bad history cursor) says nothing of Bob's
    configure: the effort's echo arriving after it still leaves his tick on screen."""
    echoes, alice, bob = _thinker_in_the_room(confab_server, people, request.node.name)
    search = _tick_after_effort_unechoed(echoes, bob)
    echoes.to_server({"type": "history", "before": "bogus"})
    expect(bob.page.locator("#notices")).to_contain_text("That is not a history cursor.")
    echoes.release(1)
    expect(search).to_be_checked()
    echoes.holding = False
    echoes.release()
    expect(alice.page.get_by_label("Web search")).to_be_checked()


def test_a_viewer_sees_no_controls(confab_server: ConfabServer, people: People,
                                   request: pytest.FixtureRequest) -> None:
    conversation = confab_server.new_conversation(request.node.name)
    carol = people.room("carol", conversation)
    expect(carol.page.locator("#viewer-note")).to_be_visible()
    expect(carol.page.locator("#model-settings")).to_have_count(0)
