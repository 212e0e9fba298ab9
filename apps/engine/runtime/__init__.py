"""The agent runtime: one ReAct loop per run (DESIGN 2.4)."""
