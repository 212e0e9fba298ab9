"""When a socket reads the log's tail from the store itself (DESIGN 3.3, "the tail is repaired").

The channel layer delivers at most once: channels-redis drops a group message for a socket whose
inbox is full (also full of other sockets' messages: one Redis key holds a whole process's
inboxes). A hole in the middle of the log reveals itself — the next event's ``seq`` skips, and
the socket fills the hole from the store — but a dropped *last* event has no next one, and a
room would show a run "running" forever. Two things reveal the tail:

- the worker sends the log's last ``seq`` to the conversation's group (``conv.hwm``, the
  high-water mark) every ``HWM_INTERVAL_S`` while a run lasts (:mod:`apps.rooms.pulse`, every
  hosted conversation at once) and once more one to two intervals after it ended;
- each socket reads the last ``seq`` from the store when its group has been quiet — no
  ``conv.event`` and no ``conv.hwm`` for ``TAIL_CHECK_S`` — while it may have lost something:
  a run is open as far as it knows, or other messages reached it meanwhile (an inbox that was
  busy is one that can have overflowed). A socket that heard nothing at all had nothing dropped
  and reads nothing.

A check counts as hearing the log, so checks are ``TAIL_CHECK_S`` apart: a socket has the last
``seq`` of a run at most ``TAIL_CHECK_S`` (and one query) after the run's end, whatever the
layer dropped. With a healthy layer the host's marks keep the group from being quiet (keep
``HWM_INTERVAL_S`` below ``TAIL_CHECK_S``), so no socket queries during a run.
"""

from __future__ import annotations

from channels.db import database_sync_to_async

from apps.engine.clock import Clock
from apps.realtime.broadcast import group_send_many
from apps.realtime.groups import HwmEnvelope, conversation_group
from apps.realtime.outage import send_all_or_drop
from apps.rooms.services.events import events_last_seqs

__all__ = ["RUN_OPENS", "TailWatch", "hwm_publish_all"]

RUN_OPENS = frozenset({"run_queued", "run_started"})
"""Event kinds after which a run is open (``run_ended`` closes it)."""


class TailWatch:
    """One socket's view of whether the log's tail may be missing. Tell it what the socket
    heard; ask it when to look next (:meth:`due_in`) and whether to read the store then
    (:meth:`wants_check`). ``quiet_s`` is ``TAIL_CHECK_S``; ``run_open`` whether a run was
    open when the socket connected."""

    def __init__(self, clock: Clock, quiet_s: float, *, run_open: bool) -> None:
        self.clock = clock
        self.quiet_s = quiet_s
        self.run_open = run_open
        self.busy = False
        self.heard_at = clock.now()

    def heard_log(self) -> None:
        """The socket is up to date with the log as of now (an event, a mark, a check)."""
        self.heard_at = self.clock.now()
        self.busy = False

    def heard_other(self) -> None:
        """A message that is not the log's (presence, typing) reached the socket."""
        self.busy = True

    def saw(self, kind: str) -> None:
        """An event of ``kind`` was sent to the socket."""
        if kind in RUN_OPENS:
            self.run_open = True
        elif kind == "run_ended":
            self.run_open = False

    def due_in(self) -> float:
        """Seconds until the group counts as quiet (<= 0: it does now)."""
        return self.heard_at + self.quiet_s - self.clock.now()

    def wants_check(self) -> bool:
        """Whether the quiet socket should read the store: it may have lost the tail."""
        return self.run_open or self.busy


async def hwm_publish_all(conversation_ids: list[int]) -> None:
    """Send each conversation's last seq (read now) to its group as ``conv.hwm``: one query,
    one batch. At most once, like every group message (dropped while the layer
    is down): the sockets' own checks back it up."""
    seqs = await database_sync_to_async(events_last_seqs)(conversation_ids)
    await send_all_or_drop(group_send_many, [(conversation_group(conversation_id), _mark(seq))
                                             for conversation_id, seq in seqs.items()])


def _mark(seq: int) -> dict[str, object]:
    mark: HwmEnvelope = {"type": "conv.hwm", "seq": seq}
    return dict(mark)
