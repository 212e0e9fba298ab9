"""Classify a provider's error response, for people chasing a rejection.

Usage::

    python -m apps.engine.classify --provider anthropic|openai|gemini --status CODE \\
        [--header 'Retry-After: 5' ...] FILE

Prints ``{"kind": ..., "retry_after_s": ...}``: ``kind`` from the closed list of DESIGN 2.3,
``retry_after_s`` in seconds as the provider asked (either Retry-After form, or the body),
unclamped, or null. Exits 2 with a message on an unreadable file or a malformed header.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from apps.engine.errors import ProviderError
from apps.engine.providers import PROTOCOLS, provider_class
from apps.engine.providers.base import ProviderSettings

__all__ = ["classify", "main"]


def classify(protocol: str, status: int, headers: dict[str, str], body: bytes) -> ProviderError:
    """The ProviderError the ``protocol`` adapter makes of this HTTP error response."""

    async def run() -> ProviderError:
        settings = ProviderSettings(protocol=protocol, base_url="http://127.0.0.1")
        provider = provider_class(protocol)(settings)
        try:
            return provider.classify_error(body, status=status, headers=headers)
        finally:
            await provider.aclose()

    return asyncio.run(run())


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected 'Name: value', got {text!r}")
    return name.strip(), value.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m apps.engine.classify",
        description="Classify a provider error response body into confab's error kinds.",
    )
    parser.add_argument("--provider", required=True, choices=sorted(PROTOCOLS))
    parser.add_argument("--status", required=True, type=int, help="the HTTP status code")
    parser.add_argument("--header", action="append", type=_header, default=[],
                        help="a response header, 'Name: value' (repeatable)")
    parser.add_argument("file", type=Path, help="the response body")
    args = parser.parse_args(argv)
    try:
        body = args.file.read_bytes()
    except OSError as exc:
        print(f"classify: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    error = classify(args.provider, args.status, dict(args.header), body)
    print(json.dumps({"kind": str(error.kind), "retry_after_s": error.retry_after_s}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
