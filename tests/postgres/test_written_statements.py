"""The statements written out or compiled once for speed, on PostgreSQL (the tests of
``tests/integration/rooms/test_written_statements.py``, collected again here)."""

from __future__ import annotations

from tests.integration.rooms.test_written_statements import (
    pytestmark,
    test_a_compiled_query_is_compiled_once_per_connection,
    test_a_pending_message_is_seen_only_in_its_own_conversation,
    test_a_query_without_its_key_exactly_once_is_refused,
    test_the_history_compiled_once_answers_as_the_orm,
    test_the_next_position_follows_the_last_that_is_not_compacted,
    test_the_setup_query_compiled_once_answers_as_the_orm,
    test_the_sidebar_row_compiled_once_answers_as_the_orm,
    test_threads_compiling_at_once_each_compile_the_same_sql,
)

__all__ = ["pytestmark", "test_a_compiled_query_is_compiled_once_per_connection",
           "test_a_pending_message_is_seen_only_in_its_own_conversation",
           "test_a_query_without_its_key_exactly_once_is_refused",
           "test_the_history_compiled_once_answers_as_the_orm",
           "test_the_next_position_follows_the_last_that_is_not_compacted",
           "test_the_setup_query_compiled_once_answers_as_the_orm",
           "test_the_sidebar_row_compiled_once_answers_as_the_orm",
           "test_threads_compiling_at_once_each_compile_the_same_sql"]
