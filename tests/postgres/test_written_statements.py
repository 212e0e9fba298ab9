"""The statements written out for speed, on PostgreSQL (the tests of
``tests/integration/rooms/test_written_statements.py``, collected again here)."""

from __future__ import annotations

from tests.integration.rooms.test_written_statements import (
    pytestmark,
    test_a_pending_message_is_seen_only_in_its_own_conversation,
    test_the_next_position_follows_the_last_that_is_not_compacted,
)

__all__ = ["pytestmark", "test_a_pending_message_is_seen_only_in_its_own_conversation",
           "test_the_next_position_follows_the_last_that_is_not_compacted"]
