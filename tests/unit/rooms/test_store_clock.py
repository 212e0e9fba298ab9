"""The times the room states (``apps/rooms/static/rooms/store.js``, run in node): "compaction
is paused until 17:30" is said in the person's time zone and language, which the page gives
the store (``data-time-zone``, ``<html lang>``), not in the browser's."""

from __future__ import annotations

from tests.unit.rooms.node import run_js

HARNESS = """
globalThis.gettext = (text) => text;
globalThis.interpolate = (text, values) => text.replace(/%\\((\\w+)\\)s/g, (_, k) => values[k]);
const store = new Store({ id: 1, name: "Alice", role: "owner" }, null, input.clock);
store._compactionPaused("Compaction failed 3 times", input.until);
output(store.notices.map((n) => n.text));
"""


def paused_notice(clock: dict[str, str], until: str = "2026-05-14T09:30:00Z") -> str:
    (text,) = run_js("store.js", "{ Store }", HARNESS, {"clock": clock, "until": until})
    return text


def test_the_pause_ends_at_a_time_in_the_persons_zone_and_language() -> None:
    assert "paused until 17:30." in paused_notice({"timeZone": "Asia/Shanghai",
                                                   "locale": "zh-hans"})
    assert "paused until 05:30 AM." in paused_notice({"timeZone": "America/New_York",
                                                      "locale": "en"})
    assert "paused until 09:30 AM." in paused_notice({"timeZone": "UTC", "locale": "en"})
