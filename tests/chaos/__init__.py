"""The chaos suite (issue 26): faults, floods and fuzz against the real multi-process stack,
run on demand by ``make chaos`` (not part of ``make test``). Each scenario adds one row to the
table printed at the end of the run (:mod:`tests.chaos.table`)."""
