"""git in a command the read-only analyzer cleared: it runs no program the workspace names.

A cleared ``git status`` or ``git diff`` runs without a person's approval, yet git runs programs
its configuration names: ``core.fsmonitor`` and the hooks on an index refresh, ``diff.external``
and ``diff.<driver>.command``, ``diff.<driver>.textconv`` and ``filter.<driver>.clean`` through
``.gitattributes``, ``gpg.program`` on a signed commit, ``remote.<name>.uploadpack`` on a partial
clone's lazy fetch, and whatever a ``.gitconfig`` in ``$HOME`` adds (DESIGN 4, "Shell").
A repository handed over with its ``.git`` directory (an archive, a copied tree) or changed by
an earlier approved command sets them. So a cleared command runs with:

- :func:`guarded_env`: no system or global configuration (``GIT_CONFIG_NOSYSTEM``,
  ``GIT_CONFIG_GLOBAL=/dev/null``), command-line configuration (``GIT_CONFIG_COUNT``, which a
  repository's own config cannot override) pinning the settings that name a program to git's
  defaults or off, no optional locks (a read does not write the index, so ``post-index-change``
  has nothing to fire on), and no transport at all (``GIT_ALLOW_PROTOCOL`` empty, which beats
  any ``protocol.*.allow``), so a lazy fetch fails instead of starting ``uploadpack``;
- a ``git`` wrapper first on ``PATH`` (:func:`install`; the analyzer accepts only the bare name
  ``git``, so every git it clears is this one) that handles what has no fixed key: it lists the
  repository's ``filter.<driver>.*`` keys (``git config`` runs no program) and empties each
  ``clean``, ``smudge`` and ``process`` (git then skips the filter: ``convert.c``,
  ``apply_filter``), and it puts ``--no-ext-diff --no-textconv`` after ``diff``, ``log``,
  ``show``, ``whatchanged``, the ``show`` of ``reflog`` and the ``show`` and ``list`` of
  ``stash`` (``stash list`` takes log's options, ``-p`` too; an empty textconv or
  external diff is an error, not "none"), ``--no-textconv`` after ``blame``, and
  ``--ignore-submodules=dirty`` after ``status`` and ``diff``, which otherwise run
  ``git status`` inside every submodule under the submodule's own configuration.

The analyzer refuses the options that would undo these (``--textconv``, ``--ext-diff``,
``--submodule=diff``, ``--ignore-submodules=none``, ``status -v``, ``describe --dirty``; see
``bash_readonly/git.py``). A pager never starts: git pages only when its output is a terminal,
and a Bash command's output is a pipe. Approved commands get none of this: a person chose to
run them, filters and hooks included.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path

from apps.engine.gitconfig import command_line_config
from apps.engine.tools.sandbox import DEFAULT_PATH

__all__ = ["PINNED_CONFIG", "guarded_env", "install"]

PINNED_CONFIG: dict[str, str] = {
    "core.fsmonitor": "false",
    "core.hooksPath": "/dev/null",
    # The signature programs by git's own defaults, found on the commands' PATH
    "gpg.program": "gpg",
    "gpg.openpgp.program": "gpg",
    "gpg.x509.program": "gpgsm",
    "gpg.ssh.program": "ssh-keygen",
    # "diff" would run git diff inside each submodule, under that submodule's configuration
    "diff.submodule": "short",
}
"""Settings given as command-line configuration to every git process of a cleared command."""

_WRAPPER = """\
#!/bin/bash
# git for a Bash command confab's read-only analyzer cleared: see apps/engine/tools/git_guard.py.
git=@GIT@
globals=()
while (($#)); do  # git's own options come before the subcommand
    case $1 in
        -C | -c | --git-dir | --work-tree | --namespace | --config-env | --super-prefix)
            globals+=("$1" "${2-}"); shift; (($#)) && shift ;;
        -*) globals+=("$1"); shift ;;
        *) break ;;
    esac
done
count=${GIT_CONFIG_COUNT:-0}
while IFS= read -r -d '' key; do
    case $key in
        filter.*.clean | filter.*.smudge | filter.*.process) value= ;;
        filter.*.required) value=false ;;
        *) continue ;;
    esac
    export "GIT_CONFIG_KEY_$count=$key" "GIT_CONFIG_VALUE_$count=$value"
    count=$((count + 1))
done < <("$git" "${globals[@]}" config -z --name-only --get-regexp '^filter\\.' 2>/dev/null)
export GIT_CONFIG_COUNT=$count
if (($#)); then
    sub=$1; shift
    diffs=(--no-ext-diff --no-textconv)
    case $sub in
        diff | log | show | whatchanged) set -- "${diffs[@]}" "$@" ;;
        blame) set -- --no-textconv "$@" ;;
        stash)  # "list" takes log's options, "-p" included
            case ${1-} in show | list) sub2=$1; shift; set -- "$sub2" "${diffs[@]}" "$@" ;; esac ;;
        reflog)  # "git reflog [options]" is "git reflog show [options]"
            case ${1-} in
                show) shift; set -- show "${diffs[@]}" "$@" ;;
                list | exists) ;;
                *) set -- "${diffs[@]}" "$@" ;;
            esac ;;
    esac
    case $sub in diff | status) set -- --ignore-submodules=dirty "$@" ;; esac
    set -- "$sub" "$@"
fi
exec "$git" "${globals[@]}" "$@"
"""


def install(directory: Path) -> Path | None:
    """Write the ``git`` wrapper into ``directory`` (created when missing) and return it, to put
    first on a cleared command's ``PATH``; None when git is not on the commands' PATH."""
    git = shutil.which("git", path=DEFAULT_PATH)
    if git is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    wrapper = directory / "git"
    wrapper.write_text(_WRAPPER.replace("@GIT@", shlex.quote(git)))
    wrapper.chmod(0o755)
    return directory


def guarded_env(env: Mapping[str, str], wrapper_dir: Path | None) -> dict[str, str]:
    """``env`` (a command's whole environment) for a cleared command: the git variables of the
    module docstring, and ``wrapper_dir`` (from :func:`install`) first on ``PATH``."""
    guarded = dict(env) | {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_ALLOW_PROTOCOL": "",
    } | command_line_config(PINNED_CONFIG)
    if wrapper_dir is not None:
        guarded["PATH"] = f"{wrapper_dir}:{env.get('PATH', DEFAULT_PATH)}"
    return guarded
