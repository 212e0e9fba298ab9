"""SSE decoding throughput: confab's decoder next to httpx-sse's and the anthropic SDK's.

Run with ``make bench`` (installs the ``bench`` extra) or
``.venv/bin/python -m tests.benchmarks.bench_sse``. The same bytes (about 5 MB built from the
recorded provider streams) go to each decoder at chunk sizes of 1 B, 64 B, 4 KiB and 64 KiB;
it prints MB/s for each and our ratio to each peer, then times ours at 1 MB and 4 MB (plus one
4 MB line) to show the cost grows linearly with the input whatever the chunking. The machine is
shared: the decoders take turns in each of ``--repeat`` rounds (default 9) and keep their best,
so the ratios of one run compare figures taken under the same load, and each is timed in the
process's CPU time (a decoder is single-threaded CPU work: the time another process holds the
core is not the decoder's), which keeps a ratio steady at a load of 6 on 2 cores. Goal
(issue 22): at least 1.5x the faster peer at every chunk size.

Each peer is driven the way its library drives it on a live response:
- httpx-sse: an incremental UTF-8 decoder (what ``httpx.Response.iter_text`` uses), then
  ``SSELineDecoder`` and ``SSEDecoder.decode`` per line, as ``EventSource.iter_sse`` does;
- anthropic: ``anthropic._streaming.SSEDecoder().iter_bytes``, as ``Stream`` does.
"""

from __future__ import annotations

import argparse
import codecs
import gc
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from apps.engine.providers.sse import iter_sse

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "providers"
MB = 1_000_000
CHUNK_SIZES = (1, 64, 4096, 65536)
REPEAT = 9

Decoder = Callable[[Iterable[bytes]], int]


def build_stream(target: int) -> bytes:
    """Concatenate the recordings (each ends an event) until ``target`` bytes."""
    bodies = [p.read_bytes() for p in sorted(FIXTURES.glob("*/*.sse"))]
    if not bodies:
        raise SystemExit(f"no recordings under {FIXTURES}")
    unit = b"".join(body if body.endswith((b"\n\n", b"\r\n\r\n")) else body + b"\n\n"
                    for body in bodies)
    return (unit * (target // len(unit) + 1))[:target].rpartition(b"\n\n")[0] + b"\n\n"


def chunks(body: bytes, size: int) -> Iterator[bytes]:
    return (body[i : i + size] for i in range(0, len(body), size))


def ours(stream: Iterable[bytes]) -> int:
    return sum(1 for _ in iter_sse(stream))


def httpx_sse_peer(stream: Iterable[bytes]) -> int:
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines, decoder, count = SSELineDecoder(), SSEDecoder(), 0
    for chunk in stream:
        for line in lines.decode(text.decode(chunk)):
            count += decoder.decode(line.rstrip("\n")) is not None
    for line in lines.flush():
        count += decoder.decode(line.rstrip("\n")) is not None
    return count


def anthropic_peer(stream: Iterable[bytes]) -> int:
    from anthropic._streaming import SSEDecoder

    return sum(1 for _ in SSEDecoder().iter_bytes(iter(stream)))


def seconds(decoder: Decoder, body: bytes, size: int, repeat: int) -> float:
    """Best of ``repeat`` runs, in CPU seconds (chunking happens inside, as a network read
    would)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        decoder(chunks(body, size))
        best = min(best, time.process_time() - start)
    return best


def throughput_table(body: bytes, repeat: int) -> None:
    """MB/s of each decoder per chunk size. The machine is shared and noisy: the decoders take
    turns within each of ``repeat`` rounds and each keeps its best round, so every ratio
    compares figures measured in the same run under the same load. 1- and 64-byte reads use
    the first 1 MB and 2 MB of the stream (a rate does not depend on the length: linear)."""
    peers: dict[str, Decoder] = {"httpx-sse": httpx_sse_peer, "anthropic": anthropic_peer}
    decoders: dict[str, Decoder] = {"ours": ours, **peers}
    counts = {name: fn(chunks(body, 4096)) for name, fn in decoders.items()}
    print(f"stream: {len(body) / MB:.2f} MB, events: {counts}, best of {repeat} rounds, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'chunk':>7} {'ours MB/s':>10} " + " ".join(f"{n + ' MB/s':>15}" for n in peers)
          + " " + " ".join(f"{'x ' + n:>13}" for n in peers))
    for size in CHUNK_SIZES:
        part = body[: {1: MB, 64: 2 * MB}.get(size, len(body))]
        best = dict.fromkeys(decoders, float("inf"))
        for _ in range(repeat):
            for name, fn in decoders.items():
                best[name] = min(best[name], seconds(fn, part, size, 1))
        rate = {name: len(part) / MB / t for name, t in best.items()}
        mine = rate.pop("ours")
        print(f"{size:>7} {mine:>10.1f} " + " ".join(f"{v:>15.1f}" for v in rate.values())
              + " " + " ".join(f"{mine / v:>13.2f}" for v in rate.values()))


def linearity(body: bytes, repeat: int) -> None:
    """Ours at 1 MB and 4 MB (best of ``repeat``), also as one long line: 4.0 is linear."""
    print("\nlinear growth (ours): seconds at 1 MB and 4 MB, and their ratio (4.0 = linear)")
    long_line = b"data: " + b"x" * (4 * MB) + b"\n\n"
    for size in CHUNK_SIZES:
        small = seconds(ours, body[: MB], size, repeat)
        large = seconds(ours, body[: 4 * MB], size, repeat)
        line_1 = seconds(ours, long_line[: MB] + b"\n\n", size, repeat)
        line_4 = seconds(ours, long_line, size, repeat)
        print(f"  chunk {size:>6}: {small:.3f}s -> {large:.3f}s  x{large / small:.2f}   "
              f"one long line: {line_1:.3f}s -> {line_4:.3f}s  x{line_4 / line_1:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=REPEAT, help="rounds per measurement")
    options = parser.parse_args()
    body = build_stream(5 * MB)
    throughput_table(body, options.repeat)
    linearity(body, max(options.repeat // 3, 1))


if __name__ == "__main__":
    main()
