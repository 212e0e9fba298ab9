"""The wiki store on a 10,000-page wiki, next to the plain ``git`` command line doing the same.

Run with ``make bench`` or ``.venv/bin/python -m tests.benchmarks.bench_wiki``. It builds a wiki
of 10,000 pages (``git fast-import``, then ``git gc`` as maintenance would), warms the catalog
once, then measures per operation (median and p95 over the runs, in ms) and prints the ratio to
the git command line doing the same work in subprocesses:

- read: ``WikiStore.read`` of a random page vs ``git rev-parse main`` + ``git cat-file``;
- write: ``WikiStore.write`` against the blob read vs the same plumbing by hand (hash-object,
  read-tree into a private index, update-index, write-tree, commit-tree, update-ref);
- search: ``WikiStore.search`` of a word in ~1 % of pages vs ``git grep -F -i``;
- 20 concurrent writers (threads, one page each) vs 20 threads running the plumbing by hand
  (retrying their compare-and-swap), as writes per second;
- memory: the process's RSS after 200 and after 2,000 mixed operations (flat means no growth).

Goals (issue 9): a read under 5 ms, a write under 50 ms, a search under 200 ms.
Profiled with ``py-spy record -s -r 500 -f raw -o wiki.txt -- .venv/bin/python -m
tests.benchmarks.bench_wiki``: writes spent their time in ``read-tree``/``update-index``/
``write-tree`` over the whole tree (now ``trees.py`` rebuilds only the changed folders) and
searches in ``git grep`` inflating every blob (now searched in memory from ``texts.py``).
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from apps.engine.wiki import Author, WikiLimits, WikiStore
from apps.engine.wiki.gitcmd import hardened_env

PAGES = 10_000
RUNS = 200
WRITERS = 20
AUTHOR = Author("Bench", "bench@x", {"Confab-User": "1"})
WORDS = ["deploy", "rollback", "incident", "runbook", "on-call", "database", "cache",
         "queue", "metrics", "alert"]


def build(path: Path) -> list[str]:
    """A bare repository with ``PAGES`` pages in 100 folders, one commit per folder."""
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    rng = random.Random(1)
    names = [f"area-{i // 100:02d}/page-{i:05d}.md" for i in range(PAGES)]
    stream = []
    for folder in range(PAGES // 100):
        stream.append(f"commit refs/heads/main\ncommitter B <b@x> {1_700_000_000 + folder} "
                      f"+0000\ndata 4\nseed\n")
        for name in names[folder * 100:(folder + 1) * 100]:
            body = f"# {name}\n\n" + "\n".join(
                " ".join(rng.choices(WORDS, k=12)) for _ in range(20)) + "\n"
            if rng.random() < 0.01:
                body += "the needle-phrase lives here\n"
            data = body.encode()
            stream.append(f"M 100644 inline {name}\ndata {len(data)}\n")
            stream.append(data.decode() + "\n")
    subprocess.run(["git", f"--git-dir={path}", "fast-import", "--quiet"],
                   input="".join(stream).encode(), check=True)
    subprocess.run(["git", f"--git-dir={path}", "gc", "-q"], check=True)
    return names


def timed(operation: Callable[[int], object], runs: int = RUNS) -> list[float]:
    samples = []
    for number in range(runs):
        start = time.perf_counter()
        operation(number)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def git(path: Path, *args: str, stdin: bytes | None = None, env: dict | None = None,
        check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], input=stdin, capture_output=True, check=check,
                          env=hardened_env(path, **(env or {})) | {"PATH": os.environ["PATH"]})


def plain_read(path: Path, name: str) -> bytes:
    head = git(path, "rev-parse", "refs/heads/main").stdout.strip().decode()
    return git(path, "cat-file", "--batch", stdin=f"{head}:{name}\n".encode()).stdout


def plain_write(path: Path, name: str, text: str, folder: str) -> None:
    """The store's write path by hand, retrying the compare-and-swap until it lands."""
    index = {"GIT_INDEX_FILE": os.path.join(folder, f"index-{threading.get_ident()}"),
             "GIT_AUTHOR_NAME": "B", "GIT_AUTHOR_EMAIL": "b@x",
             "GIT_COMMITTER_NAME": "B", "GIT_COMMITTER_EMAIL": "b@x"}
    blob = git(path, "hash-object", "-w", "--stdin", stdin=text.encode()).stdout.strip()
    while True:
        head = git(path, "rev-parse", "refs/heads/main").stdout.strip().decode()
        git(path, "read-tree", head, env=index)
        git(path, "update-index", "-z", "--index-info", env=index,
            stdin=b"100644 " + blob + b"\t" + name.encode() + b"\0")
        tree = git(path, "write-tree", env=index).stdout.strip().decode()
        commit = git(path, "commit-tree", tree, "-p", head, stdin=b"m\n",
                     env=index).stdout.strip().decode()
        if git(path, "update-ref", "refs/heads/main", commit, head, check=False).returncode == 0:
            return


def report(name: str, ours: list[float], plain: list[float], goal_ms: float) -> None:
    def p95(samples: list[float]) -> float:
        return statistics.quantiles(samples, n=20)[-1]

    mine, theirs = statistics.median(ours), statistics.median(plain)
    verdict = "ok" if mine < goal_ms else "OVER GOAL"
    print(f"{name:<8} ours {mine:7.2f} ms (p95 {p95(ours):7.2f})   git CLI {theirs:7.2f} ms "
          f"(p95 {p95(plain):7.2f})   ratio {mine / theirs:5.2f}   goal < {goal_ms:g} ms {verdict}")


def concurrent(write_one: Callable[[int, int], None]) -> float:
    """Writes per second of ``WRITERS`` threads writing 5 times each."""
    threads = [threading.Thread(target=lambda w=w: [write_one(w, n) for n in range(5)])
               for w in range(WRITERS)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return WRITERS * 5 / (time.perf_counter() - start)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-wiki-") as folder:
        path = Path(folder) / "1.git"
        started = time.perf_counter()
        names = build(path)
        print(f"built {PAGES} pages in {time.perf_counter() - started:.1f} s")
        store = WikiStore(path, limits=WikiLimits(lock_timeout_s=120))  # 20 queue up
        started = time.perf_counter()
        assert len(store.list()) == PAGES
        print(f"first list (builds the catalog): {(time.perf_counter() - started) * 1000:.0f} ms")
        rng = random.Random(2)
        picks = [rng.choice(names) for _ in range(RUNS)]

        report("read", timed(lambda n: store.read(picks[n])),
               timed(lambda n: plain_read(path, picks[n])), 5)
        report("write", timed(lambda n: _store_write(store, picks[n], n)),
               timed(lambda n: plain_write(path, picks[n], f"# plain {n}\n", folder)), 50)
        report("search", timed(lambda n: store.search("needle-phrase"), runs=50),
               timed(lambda n: git(path, "grep", "-F", "-i", "-n", "-e", "needle-phrase",
                                   "refs/heads/main", "--", check=False), runs=50), 200)
        report("list", timed(lambda n: store.list("area-07/"), runs=50),
               timed(lambda n: git(path, "ls-tree", "-r", "-l", "refs/heads/main", "--",
                                   "area-07/"), runs=50), 50)

        ours = concurrent(lambda w, n: _store_write(store, names[w], n))
        theirs = concurrent(lambda w, n: plain_write(path, names[w], f"# {w} {n}\n", folder))
        print(f"{WRITERS} writers: ours {ours:6.1f} writes/s   git CLI {theirs:6.1f} writes/s   "
              f"ratio {ours / theirs:5.2f}")

        me = psutil.Process()
        mixed = lambda n: (store.read(picks[n % RUNS]), store.search("rollback", limit=20),  # noqa: E731
                           _store_write(store, picks[n % RUNS], n) if n % 10 == 0 else None)
        timed(mixed, runs=200)
        after_200 = me.memory_info().rss / 2**20
        timed(mixed, runs=2000)
        after_2000 = me.memory_info().rss / 2**20
        print(f"memory: RSS {after_200:.1f} MiB after 200 mixed operations, {after_2000:.1f} MiB "
              f"after 2,200 (growth {after_2000 - after_200:+.1f} MiB)")


def _store_write(store: WikiStore, name: str, number: int) -> None:
    page = store.read(name)
    store.write(name, page.content + f"note {number}\n", expected_blob=page.blob,
                message=f"bench {number}", author=AUTHOR)


if __name__ == "__main__":
    main()
