"""git, hardened: a ``git.Repo`` opened and closed per operation, plumbing through ``repo.git``.

Every call runs with no system or global configuration, no hooks, no fsmonitor, no network
protocols, no prompts and a timeout (DESIGN 4; ``shared/WIKI.md`` 1, 3). Settings go in as
command-line configuration (``GIT_CONFIG_COUNT``), which a repository's own config cannot
override. User text reaches git only on stdin, after ``--``, or as the value of ``-e``: callers
never put it anywhere else in ``args``.

The server's own environment is trusted, but the variables that would point git elsewhere
(another repository, object store, index or configuration) are overridden on every call.
"""

from __future__ import annotations

import configparser
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from git import Git, Repo
from git.exc import GitCommandError, GitError
from git.refs.symbolic import SymbolicReference

from apps.engine.gitconfig import command_line_config
from apps.engine.wiki.errors import WikiDamaged, WikiUnavailable

__all__ = ["ZERO_OID", "GitSession", "git_session", "hardened_env", "init_bare"]

ZERO_OID = "0" * 40

_CONFIG = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.attributesFile": "/dev/null",
    "core.pager": "cat",
    "core.quotePath": "false",
    "protocol.allow": "never",
    "merge.conflictStyle": "merge",
    "gc.auto": "0",  # plumbing never collects; maintenance runs outside requests
}


def hardened_env(git_dir: Path, **extra: str) -> dict[str, str]:
    """The environment every wiki git process gets (``extra`` wins, e.g. ``GIT_INDEX_FILE``)."""
    env = {
        "GIT_DIR": str(git_dir),
        "GIT_OBJECT_DIRECTORY": str(git_dir / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": "",
        "GIT_INDEX_FILE": str(git_dir / "no-index"),  # reads never need one; writes bring theirs
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_PARAMETERS": "",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_LITERAL_PATHSPECS": "1",  # a path after "--" is that path, never a pattern
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "GIT_OPTIONAL_LOCKS": "0",
        "HOME": "/nonexistent",
        "XDG_CONFIG_HOME": "/nonexistent",
        "PATH": "/usr/bin:/bin",
        "LC_ALL": "C",
        "TZ": "UTC",
    } | command_line_config(_CONFIG)
    env.update(extra)
    return env


class GitSession:
    """One open repository: :meth:`run` executes a git command in it."""

    def __init__(self, repo: Repo, git_dir: Path, timeout_s: float) -> None:
        self._repo = repo
        self.git_dir = git_dir
        self._timeout_s = timeout_s

    def run(self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None,
            ok: tuple[int, ...] = (0,)) -> tuple[int, bytes]:
        """``git <args>`` → ``(exit status, stdout bytes)``.

        ``stdin``: bytes fed to the process; ``ok``: the statuses that are answers, not
        failures (``merge-file`` counts conflicts in its status). Raises WikiUnavailable for any
        other status, a timeout, or git missing.
        """
        command = ["git", *args]
        with _stdin_file(stdin) as istream:
            try:
                status, out, err = self._repo.git.execute(
                    command, istream=istream, with_extended_output=True, with_exceptions=False,
                    stdout_as_string=False, strip_newline_in_stdout=False,
                    kill_after_timeout=self._timeout_s,
                    env=hardened_env(self.git_dir, **(env or {})))
            except GitError as error:
                raise WikiUnavailable(f"git could not run: {error}") from error
        if status not in ok:
            raise WikiUnavailable(f"git {args[0]} failed ({status}): {_text(err)}")
        return status, out

    def ref(self, name: str) -> str | None:
        """The commit id the reference ``name`` (e.g. ``refs/heads/main``) holds, None when
        there is none. Read from the files by gitpython (loose, then ``packed-refs``) rather
        than by a process: ``update-ref`` renames a whole file into place, so a read never sees
        half a value."""
        try:
            return SymbolicReference.dereference_recursive(self._repo, name)
        except ValueError:
            return None

    def out(self, *args: str, stdin: bytes | None = None,
            env: Mapping[str, str] | None = None) -> bytes:
        """stdout of a command that must succeed."""
        return self.run(*args, stdin=stdin, env=env)[1]


@contextmanager
def git_session(git_dir: Path, timeout_s: float) -> Iterator[GitSession]:
    """The repository at ``git_dir`` opened for one operation and closed after it: gitpython
    keeps ``cat-file`` processes and pack handles otherwise (its docs, GitPython#1208).
    WikiUnavailable when git cannot open it; WikiDamaged when gitpython cannot read its config
    file (it parses it as it opens the repository, and refuses some that git reads: bytes that
    are not UTF-8)."""
    try:
        repo = Repo(git_dir)
    except GitError as error:
        raise WikiUnavailable(f"The wiki's repository cannot be opened: {error}") from error
    except (configparser.Error, ValueError) as error:
        raise WikiDamaged(git_dir, f"its config cannot be read: {error}") from error
    with repo:
        yield GitSession(repo, git_dir, timeout_s)


def init_bare(git_dir: Path, timeout_s: float) -> None:
    """Create an empty bare repository with branch ``main`` at ``git_dir`` (idempotent)."""
    git_dir.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:  # the repository does not exist yet: a Git bound to no repository
        Git(str(git_dir.parent)).execute(
            ["git", "init", "--quiet", "--bare", "--initial-branch=main", str(git_dir)],
            kill_after_timeout=timeout_s, env=hardened_env(git_dir))
    except GitCommandError as error:
        raise WikiUnavailable(f"The wiki's repository cannot be created: {error}") from error


@contextmanager
def _stdin_file(data: bytes | None) -> Iterator[object | None]:
    # gitpython hands ``istream`` to Popen as a file: an unnamed temporary file is one that any
    # size fits without a feeding thread.
    if data is None:
        yield None
        return
    with tempfile.TemporaryFile() as handle:
        handle.write(data)
        handle.seek(0)
        yield handle


def _text(err: bytes | str) -> str:
    text = err.decode("utf-8", "replace") if isinstance(err, bytes) else err
    return text.strip()[-500:]
