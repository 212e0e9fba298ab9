"""The chaos suite's table: each scenario appends a :class:`~tests.chaos.table.Row` with the
``chaos_row`` fixture; the table is printed at the end of the run (and written to
``$CONFAB_CHAOS_TABLE`` when set)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.chaos.table import ROWS, Row, render


@pytest.fixture
def chaos_row() -> Callable[..., Row]:
    """``chaos_row(scenario, faults)`` -> a new Row already in the table, to fill in."""

    def new(scenario: str, faults: str) -> Row:
        row = Row(scenario, faults)
        ROWS.append(row)
        return row

    return new


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not ROWS:
        return
    table = render(ROWS)
    terminalreporter.write_sep("=", "chaos")
    terminalreporter.write_line(table)
    for row in ROWS:
        for note in row.notes:
            terminalreporter.write_line(f"{row.scenario}: {note}")
    target = os.environ.get("CONFAB_CHAOS_TABLE")
    if target:
        Path(target).write_text(table + "\n")
