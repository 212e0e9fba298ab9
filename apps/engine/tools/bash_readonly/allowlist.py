"""The read-only commands, and the judgement of one command's argv against them.

A command is read-only only if its name is listed here. ``any_args`` marks commands that no
argument can make write or run code (every option of ``cat``, ``grep`` or ``ls`` only reads), so
their arguments may be unknown until run time, and ``xargs`` may feed them; the others have a
check that validates their flags and needs every argument spelled out. Command names must be bare
(``/bin/ls`` is refused: the analyzer cannot know what a path holds).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from apps.engine.tools.bash_readonly import commands
from apps.engine.tools.bash_readonly.git import check_git
from apps.engine.tools.bash_readonly.options import Check
from apps.engine.tools.bash_readonly.sed import check_sed
from apps.engine.tools.bash_readonly.tokenizer import Word
from apps.engine.tools.bash_readonly.wrappers import WRAPPERS, Unwrapped

__all__ = ["RULES", "Rule", "check_argv"]

MAX_WRAPPERS = 8
"""Most wrappers accepted around one command (``env time nice ... ls``)."""


@dataclass(frozen=True)
class Rule:
    """How to judge one read-only command: a flag ``check``, or ``any_args`` when none is needed."""

    check: Check | None = None
    any_args: bool = False


_ANY = Rule(any_args=True)

RULES: dict[str, Rule] = {
    **dict.fromkeys((
        "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "cut", "tr", "diff", "cmp",
        "comm", "paste", "stat", "du", "df", "pwd", "echo", "printenv", "which", "type", "whoami",
        "id", "uname", "basename", "dirname", "realpath", "readlink", "jq", "true", "false", ":",
        "seq", "nl", "tac", "rev", "column", "od", "hexdump", "strings", "md5sum", "sha1sum",
        "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sleep", "cd",
    ), _ANY),
    "find": Rule(commands.check_find),
    "sed": Rule(check_sed),
    "awk": Rule(commands.check_awk),
    "gawk": Rule(commands.check_awk),
    "mawk": Rule(commands.check_awk),
    "sort": Rule(commands.check_sort),
    "uniq": Rule(commands.check_uniq),
    "rg": Rule(commands.check_rg),
    "tree": Rule(commands.check_tree),
    "yq": Rule(commands.check_yq),
    "date": Rule(commands.check_date),
    "file": Rule(commands.check_file),
    "xxd": Rule(commands.check_xxd),
    "printf": Rule(commands.check_printf),
    "test": Rule(commands.check_test),
    "[": Rule(commands.check_test),
    "hostname": Rule(commands.check_hostname),
    "git": Rule(check_git),
}

KEYWORDS = frozenset({
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "[[", "]]", "coproc", "{", "}", "!",
})

# A clearer word than "unknown" for commands people expect to be judged
_KNOWN_UNSAFE = {
    "tee": "tee writes its input to files",
    "less": "less is an interactive pager",
    "more": "more is an interactive pager",
    "eval": "eval runs its arguments as shell code",
    "exec": "exec replaces the shell with another program",
    "source": "source runs a shell script",
    ".": ". runs a shell script",
    "bash": "bash runs a shell script",
    "sh": "sh runs a shell script",
    "sudo": "sudo runs a command as another user",
    "nohup": "nohup writes nohup.out",
}


def check_argv(words: Sequence[Word], *, depth: int = 0) -> str | None:
    """Why running the command ``words`` (name first) may not be read-only, or None."""
    head, args = words[0], words[1:]
    if head.dynamic:
        return f"command name {head.raw} is only known at run time"
    name = head.text
    if name in KEYWORDS and not head.quoted:
        return f"shell keyword {name!r} is not analyzed"
    unwrap = WRAPPERS.get(name)
    if unwrap is not None:
        if depth >= MAX_WRAPPERS:
            return "too many nested wrapper commands"
        unwrapped = unwrap(args)
        if isinstance(unwrapped, str):
            return unwrapped
        return _check_unwrapped(name, unwrapped, depth)
    rule = RULES.get(name)
    if rule is None:
        # ascii(): a look-alike name (fullwidth letters, a no-break space) shows as what it is
        shown = shlex.quote(name) if name.isascii() else ascii(name)
        return _KNOWN_UNSAFE.get(name, f"unknown command: {shown}")
    return rule.check(args) if rule.check else None


def _check_unwrapped(wrapper: str, unwrapped: Unwrapped, depth: int) -> str | None:
    if not unwrapped.argv:
        return None
    if problem := check_argv(unwrapped.argv, depth=depth + 1):
        return problem
    if unwrapped.adds_arguments:
        inner = unwrapped.argv[0]
        rule = None if inner.dynamic else RULES.get(inner.text)
        if rule is None or not rule.any_args:
            return (f"{wrapper} passes arguments it reads at run time to {inner.raw}, "
                    "which is not safe with arbitrary arguments")
    return None
