"""Runs our plain JavaScript modules (no DOM; gettext only if the body defines it) in node, for
unit tests."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

STATIC = Path(__file__).resolve().parents[3] / "apps/rooms/static/rooms"


def run_js(module: str, names: str, body: str, data: Any, *, static: Path = STATIC) -> Any:
    """Import ``names`` (``"{ a, b }"``) from ``<static>/<module>`` (the room's scripts unless
    told), run ``body`` with ``input`` bound to ``data`` (JSON on stdin), and return what it
    passes to ``output(...)``."""
    node = shutil.which("node")
    assert node, "node is not installed: the room's JavaScript unit tests need it"
    source = (f"import {names} from {json.dumps((static / module).as_uri())};\n"
              "let text = '';\n"
              "for await (const chunk of process.stdin) text += chunk;\n"
              "const input = JSON.parse(text);\n"
              "const output = (value) => process.stdout.write(JSON.stringify(value));\n"
              f"{body}\n")
    done = subprocess.run([node, "--input-type=module", "-e", source], input=json.dumps(data),
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
