"""``python -m apps.engine.fakellm --host 127.0.0.1 --port N [--rate 50] [--stamp]``: serve the
offline scripted model (see the package docstring for the script format). ``--stamp`` starts each
streamed text piece with the wall-clock time it was sent, ``⟦1732950000.123456⟧``, so a client on
the same machine measures provider-byte-to-screen latency (``tests/benchmarks/bench_fanout``)."""

from __future__ import annotations

import argparse

import uvicorn

from apps.engine.fakellm.app import create_app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m apps.engine.fakellm",
        description="Serve confab's offline scripted model in the Anthropic, OpenAI and Gemini "
                    "wire formats.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--rate", type=float, default=50.0,
                        help="streamed tokens per second (default 50; 0 = as fast as possible)")
    parser.add_argument("--stamp", action="store_true",
                        help="start each streamed text piece with its send time, "
                             "'⟦<time.time()>⟧', for latency benchmarks")
    args = parser.parse_args(argv)
    if args.rate < 0:
        parser.error("--rate must be 0 or more")
    uvicorn.run(create_app(rate=args.rate, stamp=args.stamp), host=args.host, port=args.port,
                log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
