"""Run the MCP conformance suite's client scenarios against confab's MCP client; print a table.

``make conformance`` installs the pinned suite and a Node 22 into ``.cache/conformance`` and runs
this. Every client scenario of spec 2025-11-25 runs one at a time (``conformance client
--scenario``) with ``python -m apps.engine.mcp.conformance`` as the client command; its
``checks.json`` gives the checks passed, failed and warned. The other scenarios (draft,
extension, older specs) are run and reported, not required. A scenario passes when the suite
says so (its exit status: it knows when a client must fail, as in scope-retry-limit) and it
recorded checks; exit status 1 when a required one does not pass or none are listed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SPEC = "2025-11-25"
CLIENT = f"{sys.executable} -m apps.engine.mcp.conformance"


def suite(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    node = root / "node_modules" / ".bin"
    env = {**os.environ, "PATH": f"{node}{os.pathsep}{os.environ['PATH']}",
           "CONFAB_ALLOW_PRIVATE_NETWORK": "1"}
    cli = root / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    return subprocess.run(["node", str(cli), *args], env=env, capture_output=True, text=True,
                          timeout=300)


def scenarios(root: Path, spec: str | None) -> list[str]:
    """The client scenarios the suite lists (for ``spec``, or all)."""
    listed = suite(root, "list", "--client", *(["--spec-version", spec] if spec else []))
    return re.findall(r"^\s+- (\S+)", listed.stdout, re.MULTILINE)


def run(root: Path, scenario: str) -> tuple[int, int, int, bool]:
    """``(passed, failed, warned, verdict)`` of one scenario; ``verdict``: the suite passed it
    (exit status 0) and recorded checks."""
    out = root / "results" / scenario.replace("/", "_")
    shutil.rmtree(out, ignore_errors=True)  # this run's checks only
    try:
        done = suite(root, "client", "--command", CLIENT, "--scenario", scenario, "-o", str(out))
    except subprocess.TimeoutExpired:
        return 0, 0, 0, False
    checks = [check for path in out.rglob("checks.json")
              for check in json.loads(path.read_text())]
    counts = [sum(c["status"] == status for c in checks)
              for status in ("SUCCESS", "FAILURE", "WARNING")]
    return counts[0], counts[1], counts[2], done.returncode == 0 and bool(checks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(".cache/conformance"))
    root = parser.parse_args().root.resolve()
    required = scenarios(root, SPEC)
    others = [name for name in scenarios(root, None) if name not in required]
    print(f"{'scenario':<44} {'passed':>6} {'failed':>6} {'warned':>6}  suite says")
    totals = [0, 0, 0]
    ok = bool(required)  # a suite that lists nothing passes nothing
    for group, names in (("required", required), ("reported only", others)):
        print(f"-- {group} (spec {SPEC})" if group == "required" else f"-- {group}")
        for name in names:
            passed, failed, warned, verdict = run(root, name)
            print(f"{name:<44} {passed:>6} {failed:>6} {warned:>6}  "
                  f"{'passed' if verdict else 'FAILED'}")
            if group == "required":
                totals = [totals[0] + passed, totals[1] + failed, totals[2] + warned]
                ok = ok and failed == warned == 0 and verdict
    print(f"Required: {totals[0]} checks passed, {totals[1]} failed, {totals[2]} warned — "
          f"{'every required scenario passes' if ok else 'NOT all passing'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
