"""git: only the subcommands that read, with the options that keep them reading.

Global options: ``-C``, ``--git-dir``, ``--work-tree``, ``--no-pager`` and the pathspec switches
are fine; ``-c``/``--config-env`` (a config override can name a program: ``core.pager``,
``core.fsmonitor``, ``diff.external``), ``--exec-path`` and anything unknown are refused.

Subcommands: ``status log show diff shortlog whatchanged rev-list rev-parse ls-files ls-tree
blame grep describe cat-file show-ref for-each-ref merge-base name-rev count-objects version``
with ``--output`` (writes a file), ``--ext-diff`` and ``--textconv`` (run programs the
repository names), ``--help`` (opens a pager), ``--submodule=diff`` and
``--ignore-submodules=none|untracked`` (run git inside submodules, under their configuration)
refused; ``status -v`` (its diff has no ``--no-textconv``), ``describe --dirty/--broken`` (they
look inside submodules), ``grep -O`` (opens a pager) and ``cat-file --filters`` refused.
``branch`` and ``tag`` only list (no new name, no ``-d -m -c``); ``config`` only reads
(``--get*``, ``--list``, ``get``, ``list``); ``stash`` only ``list``/``show``; ``remote`` only
bare, ``-v``, ``get-url`` and ``show -n`` (``show`` alone contacts the remote); ``reflog`` only
``show``/``list``/``exists``.

The analyzer only sees the command line, and a repository's own configuration can still name
programs (``core.fsmonitor``, filter drivers...): the Bash tool runs every git of a cleared
command through :mod:`apps.engine.tools.git_guard`, which neutralises them; the refusals above
keep a command line from undoing that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from apps.engine.tools.bash_readonly.options import denied_option, dynamic_argument, option_texts
from apps.engine.tools.bash_readonly.tokenizer import Word

__all__ = ["check_git"]

SubcommandCheck = Callable[[list[str]], str | None]

_GLOBAL_FLAGS = frozenset({
    "--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
    "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--bare", "--version",
})
_GLOBAL_WITH_VALUE = ("-C", "--git-dir", "--work-tree", "--namespace")
_GLOBAL_ASSIGNED = ("--git-dir=", "--work-tree=", "--namespace=")
_READING_DENY = {
    "output": "writes to a file",
    "ext-diff": "runs an external diff program",
    "textconv": "runs the repository's textconv programs",
    "help": "opens the manual in a pager",
}
_IN_SUBMODULES = "runs git inside submodules, under their own configuration"
_DENIED_VALUES = {  # long option -> the values refused
    "submodule": frozenset({"diff"}),
    "ignore-submodules": frozenset({"none", "untracked"}),
}


def check_git(args: Sequence[Word]) -> str | None:
    """Why ``git args`` may not be read-only, or None."""
    if problem := dynamic_argument("git", args):
        return problem
    texts = [w.text for w in args]
    index = 0
    while index < len(texts):
        text = texts[index]
        if text in _GLOBAL_WITH_VALUE:
            index += 2
        elif text in _GLOBAL_FLAGS or text.startswith(_GLOBAL_ASSIGNED):
            index += 1
        elif text.startswith(("-c", "--config-env")):
            return f"git {text} overrides the configuration, which can name programs to run"
        elif text.startswith("--exec-path"):
            return "git --exec-path changes where git finds its programs"
        elif text.startswith("-"):
            return f"git option {text} is not allowed"
        else:
            break
    if index >= len(texts):
        return None  # `git`, `git --version`: usage or version only
    sub, rest = texts[index], texts[index + 1:]
    check = _SUBCOMMANDS.get(sub)
    if check is None:
        return f"git {sub} is not a read-only git command"
    return check(rest)


def _reading(sub: str, **extra: str) -> SubcommandCheck:
    """A subcommand that reads, minus the options that write or run programs."""
    short = {k: v for k, v in extra.items() if len(k) == 1}
    long = _READING_DENY | {k.replace("_", "-"): v for k, v in extra.items() if len(k) > 1}
    return lambda rest: (denied_option(f"git {sub}", rest, short=short, long=long)
                         or _denied_value(f"git {sub}", rest))


def _denied_value(command: str, rest: list[str]) -> str | None:
    """Why an option of :data:`_DENIED_VALUES` has a refused value (``--submodule=diff``)."""
    for text in option_texts(rest):
        name, assigned, value = text.removeprefix("--").partition("=")
        if not text.startswith("--") or not assigned or not name:
            continue
        for option, values in _DENIED_VALUES.items():
            if option.startswith(name) and value in values:
                return f"{command} --{option}={value} {_IN_SUBMODULES}"
    return None


def _branch(rest: list[str]) -> str | None:
    return _listing("branch", rest, letters="arvlqi", flags=_BRANCH_FLAGS)


def _tag(rest: list[str]) -> str | None:
    return _listing("tag", rest, letters="lin", flags=_TAG_FLAGS)


_PLURAL = {"branch": "branches", "tag": "tags"}
_LISTING_VALUES = ("--contains", "--no-contains", "--merged", "--no-merged", "--points-at",
                   "--sort", "--format")
_BRANCH_FLAGS = frozenset({
    "--all", "--remotes", "--verbose", "--list", "--quiet", "--ignore-case", "--show-current",
    "--color", "--no-color", "--column", "--no-column", "--abbrev", "--no-abbrev", "--omit-empty",
})
_TAG_FLAGS = frozenset({"--list", "--ignore-case", "--color", "--no-color", "--column",
                        "--no-column", "--omit-empty"})


def _listing(sub: str, rest: list[str], *, letters: str, flags: frozenset[str]) -> str | None:
    """``git branch``/``git tag`` in list mode: names only as patterns after ``-l``/``--list``."""
    listing = False
    index = 0
    while index < len(rest):
        text = rest[index]
        index += 1
        name = text.partition("=")[0]
        if text in _LISTING_VALUES:
            index += 1  # the value is the next argument
        elif name in _LISTING_VALUES or name in flags or _is_short_listing(sub, text, letters):
            pass
        elif text.startswith("-"):
            return f"git {sub} {text} changes {_PLURAL[sub]}"
        elif not listing:
            return f"git {sub} {text} creates a {sub}"
        listing = listing or text in ("-l", "--list") or (
            text.startswith("-") and not text.startswith("--") and "l" in text
        )
    return None


def _is_short_listing(sub: str, text: str, letters: str) -> bool:
    """``-av``, ``-vv``, or tag's ``-n<lines>``: short flags that keep list mode."""
    if sub == "tag" and text.startswith("-n") and text[2:].isdigit():
        return True
    return text.startswith("-") and not text.startswith("--") and set(text[1:]) <= set(letters)


_CONFIG_READ_MODES = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list",
                                "-l", "--get-color", "--get-colorbool"})
_CONFIG_FLAGS = frozenset({
    "--global", "--system", "--local", "--worktree", "--show-origin", "--show-scope",
    "--name-only", "-z", "--null", "--bool", "--int", "--bool-or-int", "--path", "--expiry-date",
    "--includes", "--no-includes", "--all", "--regexp", "--fixed-value", "--show-names",
})
_CONFIG_WRITE_VERBS = frozenset({"set", "unset", "rename-section", "remove-section", "edit"})
_CONFIG_VALUES = ("--file", "-f", "--blob", "--type", "--default", "--url")


def _config(rest: list[str]) -> str | None:
    """``git config`` that only reads: a ``--get*``/``--list`` mode, or the verbs get/list."""
    if rest and rest[0] in _CONFIG_WRITE_VERBS:
        return f"git config {rest[0]} changes the configuration"
    reads = bool(rest) and rest[0] in ("get", "list")
    index = 1 if reads else 0
    while index < len(rest):
        text = rest[index]
        index += 1
        if text in _CONFIG_VALUES:
            index += 1
        elif text in _CONFIG_READ_MODES:
            reads = True
        elif text in _CONFIG_FLAGS or text.partition("=")[0] in _CONFIG_VALUES:
            pass
        elif text.startswith("-"):
            return f"git config {text} is not a reading option"
    if not reads:
        return "git config without --get or --list may change the configuration"
    return None


def _stash(rest: list[str]) -> str | None:
    if rest[:1] in (["list"], ["show"]):
        return _reading(f"stash {rest[0]}")(rest[1:])
    what = rest[0] if rest else "(push)"
    return f"git stash {what} changes the stash"


def _remote(rest: list[str]) -> str | None:
    if rest in ([], ["-v"], ["--verbose"]) or rest[:1] == ["get-url"]:
        return None
    if rest[:1] == ["show"] and "-n" in rest:
        return None
    if rest[:1] == ["show"]:
        return "git remote show contacts the remote (use -n)"
    return f"git remote {rest[0]} changes remotes"


def _reflog(rest: list[str]) -> str | None:
    if not rest or rest[0] in ("show", "list", "exists") or rest[0].startswith("-"):
        return _reading("reflog")(rest)
    return f"git reflog {rest[0]} changes the reflog"


_SUBCOMMANDS: dict[str, SubcommandCheck] = {
    **{name: _reading(name) for name in (
        "log", "show", "diff", "shortlog", "whatchanged", "rev-list", "rev-parse",
        "ls-files", "ls-tree", "blame", "show-ref", "for-each-ref", "merge-base",
        "name-rev", "count-objects", "version",
    )},
    "status": _reading("status", v="shows a diff through the repository's textconv programs",
                       verbose="shows a diff through the repository's textconv programs"),
    "describe": _reading("describe", dirty=_IN_SUBMODULES, broken=_IN_SUBMODULES),
    "grep": _reading("grep", O="opens files in a pager", open_files_in_pager="opens a pager",
                     textconv="runs conversion filters"),
    "cat-file": _reading("cat-file", filters="runs filters"),
    "branch": _branch,
    "tag": _tag,
    "config": _config,
    "stash": _stash,
    "remote": _remote,
    "reflog": _reflog,
}
