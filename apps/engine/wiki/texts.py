"""Page texts by blob id, kept per process within a byte budget.

A blob id names its content, so a kept text is never stale and nothing needs invalidating: a
changed page is a new blob. The catalog (titles) and search read texts through here, so a wiki
whose catalog was built once is searched from memory, reading from git only what changed since.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from apps.engine.wiki.gitcmd import GitSession
from apps.engine.wiki.objects import read_blobs

__all__ = ["CACHE_BYTES", "keep", "texts_of"]

CACHE_BYTES = 64 * 1024 * 1024  # every wiki of the process together, least recently used out

_lock = threading.Lock()
_texts: OrderedDict[str, tuple[str, int]] = OrderedDict()  # blob -> (text, its size in bytes)
_held = [0]  # bytes held, in a list so the functions below can update it in place


def texts_of(session: GitSession, blobs: Iterable[str]) -> dict[str, str]:
    """``blob id -> text`` (UTF-8, undecodable bytes replaced) for each of ``blobs`` (ids a
    tree of the repository names): those kept, the rest read in one ``cat-file --batch`` and
    kept. Raises WikiDamaged when git cannot read one, WikiUnavailable when git fails."""
    found: dict[str, str] = {}
    missing: list[str] = []
    with _lock:
        for blob in dict.fromkeys(blobs):
            kept = _texts.get(blob)
            if kept is None:
                missing.append(blob)
            else:
                _texts.move_to_end(blob)
                found[blob] = kept[0]
    if missing:
        read = _read(session, missing)
        keep(read)
        found.update((blob, text) for blob, (text, _) in read.items())
    return found


def keep(texts: Mapping[str, tuple[str, int]]) -> None:
    """Keep ``blob id -> (text, size in bytes)``, dropping the least recently used beyond
    :data:`CACHE_BYTES`."""
    with _lock:
        for blob, entry in texts.items():
            if blob not in _texts:
                _texts[blob] = entry
                _held[0] += entry[1]
        while _held[0] > CACHE_BYTES and _texts:
            _held[0] -= _texts.popitem(last=False)[1][1]


def _read(session: GitSession, blobs: list[str]) -> dict[str, tuple[str, int]]:
    return {blob: (data.decode("utf-8", "replace"), len(data))
            for blob, data in read_blobs(session, blobs)}
