"""The room page as the browser tests see it: a thin wrapper over its DOM contract.

    #transcript
      article.message[data-message-id][data-role]   .author  .body
        details.thinking
        .tool-card[data-call-id]  .tool-name .tool-args .tool-status .decided-by
                                  button[data-action="approve"|"deny"]
      .queued
    form#composer  textarea[name="text"]  button[data-action="send"]   (Enter also sends)
    #run-status  button[data-action="stop"]  #presence li[data-user-id]  #connection[data-state]

Every wait is on observable DOM state (Playwright's ``expect``), never on a sleep.
"""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Locator, Page, Response, expect


def script(*steps: dict[str, Any]) -> str:
    """The text of a message that makes the offline model follow ``steps``."""
    return json.dumps({"script": list(steps)})


def conversation_path(conversation_id: int) -> str:
    return f"/conversations/{conversation_id}/"


class Room:
    """One person's view of one conversation."""

    def __init__(self, page: Page, conversation_id: int, who: str = "") -> None:
        self.page = page
        self.conversation_id = conversation_id
        self.who = who

    def __repr__(self) -> str:
        return f"Room({self.who or '?'} in conversation {self.conversation_id})"

    # -- navigation ---------------------------------------------------------------------------

    def open(self) -> Response | None:
        """Load the room page and wait for its transcript."""
        response = self.page.goto(conversation_path(self.conversation_id))
        expect(self.transcript).to_be_attached()
        return response

    def reload(self) -> None:
        self.page.reload()
        expect(self.transcript).to_be_attached()

    # -- parts of the page --------------------------------------------------------------------

    @property
    def transcript(self) -> Locator:
        return self.page.locator("#transcript")

    def messages(self, role: str | None = None) -> Locator:
        selector = "article.message[data-message-id]"
        if role is not None:
            selector += f'[data-role="{role}"]'
        return self.transcript.locator(selector)

    def assistant_bodies(self) -> Locator:
        return self.messages("assistant").locator(".body")

    @property
    def composer(self) -> Locator:
        return self.page.locator("form#composer")

    @property
    def textarea(self) -> Locator:
        return self.composer.locator('textarea[name="text"]')

    @property
    def run_status(self) -> Locator:
        return self.page.locator("#run-status")

    @property
    def stop_button(self) -> Locator:
        return self.page.locator('button[data-action="stop"]')

    def tool_cards(self) -> Locator:
        return self.transcript.locator(".tool-card[data-call-id]")

    def presence(self, user_id: int) -> Locator:
        return self.page.locator(f'#presence li[data-user-id="{user_id}"]')

    # -- actions ------------------------------------------------------------------------------

    def send(self, text: str, *, enter: bool = False) -> None:
        """Type ``text`` in the composer and send it with the button (or Enter)."""
        self.textarea.fill(text)
        if enter:
            self.textarea.press("Enter")
        else:
            self.composer.locator('button[data-action="send"]').click()
        expect(self.textarea).to_have_value("")  # the composer empties once it is sent

    def wait_until_present(self, *user_ids: int) -> None:
        """Wait until the presence list shows everyone in ``user_ids``: their sockets (and this
        page's) are connected."""
        for user_id in user_ids:
            expect(self.presence(user_id)).to_be_attached()

    def body_text(self, index: int = -1) -> str:
        """The text of an assistant message's body as shown (``inner_text``, trimmed)."""
        bodies = self.assistant_bodies()
        count = bodies.count()
        return bodies.nth(index if index >= 0 else count + index).inner_text().strip()

    def describe(self) -> str:
        """What the page shows, for assertion messages: the run status and the transcript."""
        status = self.run_status.all_inner_texts()
        try:
            transcript = self.transcript.inner_text(timeout=2000)
        except Exception as error:  # a diagnostic: never the failure itself
            transcript = f"<no transcript: {error}>"
        return f"{self!r}: #run-status={status!r}\n#transcript:\n{transcript}"
