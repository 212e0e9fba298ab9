"""Run hooks (DESIGN 2.4): points where a host or a feature (session memory) joins a run.

Subclass :class:`RunHooks` and override what you need; every hook is awaited in the run's task,
so a slow hook should start its own background task (session-memory extraction does).
"""

from __future__ import annotations

from apps.engine.messages import Message, ToolResultBlock

__all__ = ["RunHooks"]


class RunHooks:
    """No-op hooks; each receives what the run knows at that point."""

    async def turn_start(self, turn: int, history: list[Message]) -> None:
        """Before the model call of step ``turn`` (1-based)."""

    async def turn_end(self, turn: int, history: list[Message]) -> None:
        """After step ``turn``'s tool results and injected messages joined the history."""

    async def tool_start(self, call_id: str, name: str) -> None:
        """The executor is about to invoke call ``call_id`` of tool ``name``."""

    async def tool_end(self, call_id: str, result: ToolResultBlock) -> None:
        """Call ``call_id`` produced ``result``."""

    async def run_end(self, status: str, history: list[Message]) -> None:
        """The run is over with ``status`` ("completed", "cancelled", "failed")."""
