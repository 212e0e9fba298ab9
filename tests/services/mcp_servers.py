"""Real MCP servers for the tests, installed by the tests themselves on first use.

- ``@modelcontextprotocol/server-everything`` from the npm registry, pinned, installed once into
  ``<repo>/.cache/mcp-npm`` (ignored by git) with ``npm install --prefix``, and run with node from
  its ``bin`` entry (``dist/index.js stdio``), never through npx;
- ``mcp-server-time`` from PyPI, a dependency of the ``dev`` extra, run as
  ``python -m mcp_server_time`` with this interpreter.

:func:`everything_command` and :func:`time_command` give ``(command, args, read_paths)``: what a
stdio :class:`~apps.engine.mcp.McpServerSpec` needs, the read paths being the installation a
sandboxed server must be able to read.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NPM_PREFIX = ROOT / ".cache" / "mcp-npm"
EVERYTHING = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
_INSTALL_TIMEOUT_S = 300


class McpServerInstallError(RuntimeError):
    """The npm install of a test server failed (the message has npm's output)."""


def everything_package() -> Path:
    """The installed server-everything package directory; installs it on first use (a file
    lock keeps two test processes from installing at once)."""
    package = NPM_PREFIX / "node_modules" / EVERYTHING
    NPM_PREFIX.mkdir(parents=True, exist_ok=True)
    with open(NPM_PREFIX / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed_version(package) != EVERYTHING_VERSION:
            _npm_install(f"{EVERYTHING}@{EVERYTHING_VERSION}")
    return package


def _installed_version(package: Path) -> str | None:
    try:
        return json.loads((package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _npm_install(spec: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise McpServerInstallError("npm is not installed: the MCP tests need node and npm")
    done = subprocess.run(
        [npm, "install", "--prefix", str(NPM_PREFIX), "--no-audit", "--no-fund",
         "--no-save", "--ignore-scripts", spec],
        capture_output=True, text=True, timeout=_INSTALL_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise McpServerInstallError(f"npm install {spec} failed:\n{done.stdout}\n{done.stderr}")


def everything_command() -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """server-everything over stdio: node runs the package's ``bin`` script."""
    package = everything_package()
    manifest = json.loads((package / "package.json").read_text())
    script = package / manifest["bin"]["mcp-server-everything"]
    node = shutil.which("node")
    if node is None:
        raise McpServerInstallError("node is not installed: the MCP tests need it")
    return node, (str(script), "stdio"), (str(NPM_PREFIX),)


def time_command() -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """mcp-server-time over stdio, with this interpreter (the virtualenv has the package)."""
    return sys.executable, ("-m", "mcp_server_time", "--local-timezone", "Etc/UTC"), \
        python_read_paths()


def python_read_paths() -> tuple[str, ...]:
    """What a sandboxed Python of this virtualenv reads: the venv and the base installation."""
    return tuple(dict.fromkeys((sys.prefix, sys.base_prefix)))
