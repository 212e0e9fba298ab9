"""Images in the room in a real browser (issue 18): a pasted image is uploaded, sent with the
message, shown in the transcript from the server, and the offline model's request carries it.

The team's offline model is pointed, for this test, at a fakellm of the test's own that records
every request body (:func:`tests.integration.fakellm_server.serve_fakellm`), and back after it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser.live import ConfabServer, People
from tests.images import image_bytes
from tests.integration.fakellm_server import serve_fakellm
from tests.services.django_proc import last_json, run_script

pytestmark = pytest.mark.e2e

PNG = image_bytes(12, 9, "PNG", color=(10, 120, 200))

_POINT_AT = (
    "import json\n"
    "from apps.integrations.models import ProviderConfig\n"
    "provider = ProviderConfig.objects.get(name='Offline scripted model (fakellm)')\n"
    "before = provider.base_url\n"
    "provider.base_url = {url!r}\n"
    "provider.save(update_fields=['base_url'])\n"
    "print(json.dumps({{'before': before}}))\n")


@pytest.fixture
def recorded(confab_server: ConfabServer) -> Iterator[list[dict[str, Any]]]:
    """The request bodies the team's model receives during the test."""
    bodies: list[dict[str, Any]] = []
    ready, stop = threading.Event(), threading.Event()
    origin: list[str] = []

    async def serve() -> None:
        async with serve_fakellm(rate=200, bodies=bodies) as url:
            origin.append(url)
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)  # a thread's loop polling its stop flag, not a wait

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the recording fakellm did not start"
    before = last_json(run_script(_POINT_AT.format(url=origin[0]), confab_server.env))["before"]
    try:
        yield bodies
    finally:
        run_script(_POINT_AT.format(url=before), confab_server.env)
        stop.set()
        thread.join(30)


@pytest.fixture
def conversation(confab_server: ConfabServer, request: pytest.FixtureRequest) -> int:
    return confab_server.new_conversation(request.node.name)


PASTE = """(area, b64) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], "screenshot.png", { type: "image/png" }));
  area.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true,
                                                   cancelable: true }));
}"""


def test_a_pasted_image_is_sent_shown_and_reaches_the_model(
        people: People, conversation: int, recorded: list[dict[str, Any]]) -> None:
    alice = people.room("alice", conversation)
    alice.textarea.evaluate(PASTE, base64.b64encode(PNG).decode())  # as a paste from the OS
    chip = alice.composer.locator("#composer-attachments li[data-image-id]")
    expect(chip).to_have_count(1)
    image_id = chip.get_attribute("data-image-id")
    alice.textarea.fill("What colour is this?")
    alice.textarea.press("Enter")

    image = alice.messages("user").last.locator(".images img")
    expect(image).to_have_attribute("src", f"/api/conversations/{conversation}/images/{image_id}")
    expect(chip).to_have_count(0)  # the composer is empty again
    expect(alice.assistant_bodies().last).not_to_be_empty()
    alice.page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                                 arg=image.element_handle())  # served to her, and decoded
    assert image.evaluate("img => img.naturalWidth") == 12

    (body,) = [b for b in recorded if "What colour is this?" in json.dumps(b)]
    assert {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": base64.b64encode(PNG).decode()}} \
        in body["messages"][-1]["content"]
