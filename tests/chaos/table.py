"""The chaos suite's one table: a row per scenario, printed at the end of ``make chaos``.

Columns (issue 26): scenario, faults injected, runs completed / interrupted / failed as
expected, messages lost, deltas duplicated or missing, sockets repaired (``repaired/total``),
seconds to recover (from the fault to every socket seq-exact again; ``-`` when the scenario has
no recovery to time). A scenario records its row before it asserts, so a failing row is still
in the table with the figures that failed it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ROWS", "Row", "render"]

HEADERS = ("scenario", "faults injected", "runs ok/int/fail", "msgs lost",
           "deltas dup/miss", "sockets repaired", "recover s")


@dataclass
class Row:
    """One scenario's figures; counts are plain integers, ``recover_s`` seconds or None."""

    scenario: str
    faults: str
    completed: int = 0
    interrupted: int = 0
    failed: int = 0
    messages_lost: int = 0
    deltas_duplicated: int = 0
    deltas_missing: int = 0
    sockets_repaired: int = 0
    sockets: int = 0
    recover_s: float | None = None
    notes: list[str] = field(default_factory=list)

    def cells(self) -> tuple[str, ...]:
        return (self.scenario, self.faults,
                f"{self.completed}/{self.interrupted}/{self.failed}",
                str(self.messages_lost), f"{self.deltas_duplicated}/{self.deltas_missing}",
                f"{self.sockets_repaired}/{self.sockets}" if self.sockets else "-",
                "-" if self.recover_s is None else f"{self.recover_s:.2f}")


ROWS: list[Row] = []  # in the order the scenarios ran


def render(rows: list[Row]) -> str:
    """The rows as a Markdown table (pasted as-is into the issue note)."""
    lines = [HEADERS, *(row.cells() for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADERS))]

    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join([line(HEADERS), "| " + " | ".join("-" * w for w in widths) + " |",
                      *(line(row.cells()) for row in rows)])
