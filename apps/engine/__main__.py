"""Run the engine alone: ``python -m apps.engine run``.

Usage::

    python -m apps.engine run --provider anthropic|openai|gemini --base-url URL --model NAME \\
        [--api-key-env VAR] [--workspace DIR] [--jsonl] [--context-window N] "prompt"

One agent run with the built-in tools, printed as readable text (or the runtime events as JSON
lines with ``--jsonl``). With the fakellm server (``python -m apps.engine.fakellm``) it is a
full offline run. AskUser questions are answered on standard input; there is no approval step
(the person at the terminal runs it on their own machine), and a warning says so when Bash
cannot be sandboxed. Ctrl-C stops the run cleanly (its last events are still printed); a second
Ctrl-C quits at once. The history is compacted when it nears ``--context-window`` tokens, and
after a "prompt too long" answer. Exit code 0 when the run completed, 1 when it failed, 2 on
bad arguments, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import uuid
from pathlib import Path

from apps.engine.compaction.auto_compact import Compactor
from apps.engine.events import RuntimeEvent
from apps.engine.messages import Message
from apps.engine.ports import UserAnswer
from apps.engine.providers import PROTOCOLS, provider_class
from apps.engine.providers.base import ProviderSettings
from apps.engine.providers.retry import RetryingProvider
from apps.engine.runtime.runner import AgentRunner, RunConfig
from apps.engine.tools.defaults import default_tools
from apps.engine.tools.sandbox import sandbox_status
from apps.engine.transcript_view import TextView

DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY",
                   "gemini": "GEMINI_API_KEY"}
EXIT = {"completed": 0, "failed": 1, "cancelled": 130}


class StdinAnswers:
    """AskUser through the terminal: the question on stderr, the answer from stdin."""

    async def ask(self, question_id: str, question: str) -> UserAnswer:
        print(f"\n? {question}\n> ", end="", file=sys.stderr, flush=True)
        line = await asyncio.to_thread(sys.stdin.readline)
        return UserAnswer(text=line.rstrip("\n"), answered_by=os.environ.get("USER", "you"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m apps.engine",
                                     description="Run confab's agent engine on its own.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="one agent run with the built-in tools")
    run.add_argument("--provider", required=True, choices=sorted(PROTOCOLS))
    run.add_argument("--base-url", required=True,
                     help="as the vendor SDK takes it (OpenAI-compatible: with /v1)")
    run.add_argument("--model", required=True)
    run.add_argument("--api-key-env", help="environment variable holding the API key "
                     "(default: ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY)")
    run.add_argument("--workspace", type=Path,
                     help="directory the tools work in (default: a new temporary one)")
    run.add_argument("--jsonl", action="store_true", help="print runtime events as JSON lines")
    run.add_argument("--max-iterations", type=int, default=50)
    run.add_argument("--context-window", type=int, default=200_000,
                     help="the model's context window in tokens (for compaction)")
    run.add_argument("prompt")
    return parser


async def _run(args: argparse.Namespace) -> int:
    key = os.environ.get(args.api_key_env or DEFAULT_KEY_ENV[args.provider])
    settings = ProviderSettings(protocol=args.provider, base_url=args.base_url, api_key=key)
    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="confab-run-"))
    workspace.mkdir(parents=True, exist_ok=True)
    view = TextView(sys.stdout, sys.stderr)
    await _warn_if_unsandboxed()
    async with provider_class(args.provider)(settings) as adapter:
        provider = RetryingProvider(adapter)
        runner = AgentRunner(
            provider, default_tools(wiki=False),
            RunConfig(model=args.model, max_iterations=args.max_iterations,
                      context_window=args.context_window),
            [Message(role="user", content=args.prompt)], run_id=uuid.uuid4().hex,
            workspace=workspace.resolve(), inputs=StdinAnswers(),
            compactor=Compactor(provider, args.model, context_window=args.context_window,
                                max_output=None))
        _stop_on_interrupt(runner)
        async for event in runner.events():
            _show(event, args.jsonl, view)
    return EXIT[runner.status or "failed"]


def _stop_on_interrupt(runner: AgentRunner) -> None:
    """First Ctrl-C: stop the run cleanly (its closing events still print); second: quit."""
    stopping = False

    def interrupted() -> None:
        nonlocal stopping
        if stopping:
            raise KeyboardInterrupt
        stopping = True
        runner.cancel()

    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, interrupted)


async def _warn_if_unsandboxed() -> None:
    active, reason = await asyncio.to_thread(sandbox_status, "auto")
    if not active:
        print(f"warning: Bash commands run on this machine unconfined ({reason}).",
              file=sys.stderr)


def _show(event: RuntimeEvent, jsonl: bool, view: TextView) -> None:
    if jsonl:
        sys.stdout.write(event.model_dump_json() + "\n")
        sys.stdout.flush()
    else:
        view.show(event)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.max_iterations < 1:
        _parser().error("--max-iterations must be at least 1")
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `| head`: the reader left; not an error of the run
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
