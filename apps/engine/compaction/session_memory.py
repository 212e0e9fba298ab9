"""Session memory (DESIGN 2.6): a notes file per conversation, kept up to date in the background.

After a step, when enough has happened since the last extraction (tokens or tool calls), a
forked agent — same provider and model, its own short history, only the Read and Edit tools —
folds the new part of the conversation into ``.confab/memory.md`` in the workspace. It runs as a
background task so the run never waits for it, and may outlive the run (the host bounds it in
time and cancels it when the conversation's next run starts); one extraction at a time; a failure
or a cancellation releases the flag so the next step can try again. Compaction puts the notes
into its summary, so what the notes hold survives when older turns are cut.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from apps.engine.compaction.auto_compact import transcript
from apps.engine.errors import ToolError
from apps.engine.messages import Message, ToolUseBlock
from apps.engine.providers.base import AiProvider
from apps.engine.runtime.hooks import RunHooks
from apps.engine.runtime.incremental import TokenCounter
from apps.engine.runtime.runner import AgentRunner, RunConfig
from apps.engine.tools.builtin.edit import EditTool
from apps.engine.tools.builtin.read import ReadTool
from apps.engine.tools.registry import ToolRegistry
from apps.engine.tools.workspace import open_in_workspace, resolve_path

__all__ = ["MEMORY_FILE", "MIN_TOKENS", "MIN_TOOL_CALLS", "SessionMemory", "SessionMemoryState"]

MEMORY_FILE = ".confab/memory.md"
MIN_TOKENS = 8_000
"""Tokens (estimated) since the last extraction that make the notes due, by default."""
MIN_TOOL_CALLS = 8
"""Tool calls since the last extraction that make the notes due, by default."""
_MAX_NOTES_BYTES = 64 * 1024
TEMPLATE = """# Session notes

## Goal

## Decisions

## Files and commands

## Open tasks
"""
EXTRACTOR_SYSTEM = (
    "You maintain the notes file of a conversation between people and an AI agent. Read the "
    f"file {MEMORY_FILE}, then use the Edit tool to fold in what matters from the new part of "
    "the conversation: goals, decisions and who made them, files and commands with their "
    "outcome, open tasks. Keep it short; replace stale lines rather than appending history. "
    "Answer with one line when done."
)


@dataclass(slots=True)
class SessionMemoryState:
    """Per conversation: how far the notes go (history index) and whether one is running."""

    extracted_upto: int = 0
    running: bool = False
    failures: int = 0


class SessionMemory(RunHooks):
    """Run hooks that refresh the notes after each step when ``min_tokens`` (estimated) or
    ``min_tool_calls`` have passed since the last extraction."""

    def __init__(self, provider: AiProvider, model: str, workspace: Path, *,
                 state: SessionMemoryState | None = None, min_tokens: int = MIN_TOKENS,
                 min_tool_calls: int = MIN_TOOL_CALLS) -> None:
        self.provider = provider
        self.model = model
        self.workspace = workspace
        self.state = state or SessionMemoryState()
        self.min_tokens = min_tokens
        self.min_tool_calls = min_tool_calls
        self._tasks: set[asyncio.Task[None]] = set()
        # estimates of the history kept as it grows: due() at every turn's end estimates
        # only what was appended (it re-estimated everything since the last extraction:
        # quadratic in a long run whose notes wait, e.g. below min_tokens)
        self._tokens = TokenCounter()

    def read(self) -> str | None:
        """The notes, or None before the first extraction (or when the file is unusable).
        Host-side, so it never follows a link the agent planted out of the workspace."""
        try:
            path = resolve_path(self.workspace, MEMORY_FILE)
            with open_in_workspace(self.workspace, path) as notes:
                return notes.read(_MAX_NOTES_BYTES).decode("utf-8", "replace")
        except (OSError, ToolError):
            return None

    def due(self, history: list[Message]) -> bool:
        """Whether enough happened since the last extraction."""
        new = history[self.state.extracted_upto :]
        calls = sum(isinstance(b, ToolUseBlock) for m in new for b in m.content)
        tokens = self._tokens.tokens(history, 0, self.state.extracted_upto)
        return calls >= self.min_tool_calls or tokens >= self.min_tokens

    async def turn_end(self, turn: int, history: list[Message]) -> None:
        if self.state.extracted_upto > len(history):  # the history was compacted
            self.state.extracted_upto = 0
        if self.state.running or not self.due(history):
            return
        self.state.running = True
        task = asyncio.create_task(self._extract(list(history)), name="session-memory")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def busy(self) -> bool:
        """Whether an extraction is in progress."""
        return bool(self._tasks)

    async def wait(self) -> None:
        """Wait for the extraction in progress, if any; never raises (a cancelled one counts
        as not done: ``state.extracted_upto`` stays where it was)."""
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def cancel(self) -> None:
        """Cancel the extraction in progress, if any (:meth:`wait` then returns at once)."""
        for task in self._tasks:
            task.cancel()

    async def _extract(self, history: list[Message]) -> None:
        try:
            await asyncio.to_thread(self._ensure_file)
            new = transcript(history[self.state.extracted_upto :])
            prompt = (f"The new part of the conversation:\n\n{new}\n\n"
                      f"Update {MEMORY_FILE} with the Edit tool.")
            fork = AgentRunner(
                self.provider, ToolRegistry([ReadTool(), EditTool()]),
                RunConfig(model=self.model, system=EXTRACTOR_SYSTEM, max_iterations=6),
                [Message(role="user", content=prompt)], run_id="session-memory",
                workspace=self.workspace)
            await fork.run()
            if fork.status != "completed":
                raise RuntimeError(f"the notes agent ended {fork.status}")
            self.state.extracted_upto = len(history)
            self.state.failures = 0
        except Exception:  # the next step retries; a run never fails because of its notes
            self.state.failures += 1
        finally:
            self.state.running = False

    def _ensure_file(self) -> None:
        if self.read() is not None:
            return
        path = resolve_path(self.workspace, MEMORY_FILE)
        with open_in_workspace(self.workspace, path, write=True, create_parents=True) as notes:
            notes.write(TEMPLATE.encode())
