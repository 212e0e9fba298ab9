"""Commands that run another command: env, xargs, timeout, nice, time, command.

Each unwraps its own options and returns the command it would run (judged by the allowlist like
any other), or the reason its own options are refused. ``xargs`` adds arguments read from its
input, so the command it runs must be safe with any arguments at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from apps.engine.tools.bash_readonly.environment import assignment_problem
from apps.engine.tools.bash_readonly.options import dynamic_argument
from apps.engine.tools.bash_readonly.tokenizer import Word

__all__ = ["WRAPPERS", "Unwrapped"]


@dataclass(frozen=True)
class Unwrapped:
    """The command a wrapper runs (empty: none); ``adds_arguments`` when it appends unknown ones."""

    argv: tuple[Word, ...]
    adds_arguments: bool = False


Unwrap = Callable[[Sequence[Word]], "Unwrapped | str"]


def unwrap_env(args: Sequence[Word]) -> Unwrapped | str:
    """``env [-0v] [-u NAME] [-C DIR] [--] [NAME=VALUE]... [COMMAND...]``; -i, -S refused."""
    index, options = 0, True
    while index < len(args):
        word, text = args[index], args[index].text
        if problem := dynamic_argument("env", [word]):
            return problem
        if options and text.startswith("-"):
            skip = _env_option(text, args[index + 1].text if index + 1 < len(args) else "")
            if isinstance(skip, str):
                return skip
            if problem := dynamic_argument("env", args[index + 1:index + 1 + skip]):
                return problem
            index += 1 + skip
            options = text != "--"
        elif "=" in text:
            if problem := assignment_problem(word, exported=True):
                return problem
            index, options = index + 1, False
        else:
            break
    return Unwrapped(tuple(args[index:]))


def _env_option(text: str, following: str) -> int | str:
    """How many following arguments the env option ``text`` takes, or why it is refused."""
    if text in ("--", "-0", "--null", "-v", "--debug"):
        return 0
    if text in ("-C", "--chdir"):
        return 1
    if text.startswith(("-C", "--chdir=")):
        return 0
    if text in ("-u", "--unset"):
        name, takes = following, 1
    elif text.startswith(("-u", "--unset=")):
        name, takes = text.partition("=")[2] if text.startswith("--") else text[2:], 0
    elif text in ("-i", "--ignore-environment", "-"):
        return "env -i clears the environment, which changes where the command is looked up"
    else:
        return f"env option {text} is not allowed"
    if name == "PATH":
        return "env -u PATH changes where the command is looked up"
    return takes


_XARGS_FLAGS = frozenset("0rtx")
_XARGS_VALUES = frozenset("aEILnPsd")
_XARGS_OPTIONAL = frozenset("eil")
_XARGS_LONG_FLAGS = frozenset({"null", "no-run-if-empty", "verbose", "exit"})
_XARGS_LONG_VALUES = frozenset({"arg-file", "delimiter", "max-args", "max-procs", "max-chars"})
_XARGS_LONG_OPTIONAL = frozenset({"eof", "replace", "max-lines"})


def unwrap_xargs(args: Sequence[Word]) -> Unwrapped | str:
    """``xargs [OPTION]... [COMMAND [ARG]...]``: options stop at the command (getopt ``+``).

    ``-p``/``--interactive`` and ``-o``/``--open-tty`` use the terminal; ``--process-slot-var``
    sets a variable in the command's environment; unknown options are refused.
    """
    index = 0
    while index < len(args) and args[index].text.startswith("-") and args[index].text != "-":
        word = args[index]
        if problem := dynamic_argument("xargs", [word]):
            return problem
        index += 1
        if word.text == "--":
            break
        skip = _xargs_option(word.text)
        if isinstance(skip, str):
            return skip
        index += skip
    if problem := dynamic_argument("xargs", args[:index]):
        return problem
    return Unwrapped(tuple(args[index:]), adds_arguments=index < len(args))


def _xargs_option(text: str) -> int | str:
    """How many following arguments the xargs option ``text`` takes, or why it is refused."""
    if text.startswith("--"):
        name, has_value, _ = text[2:].partition("=")
        if name in _XARGS_LONG_VALUES:
            return 0 if has_value else 1
        if name in _XARGS_LONG_FLAGS or name in _XARGS_LONG_OPTIONAL:
            return 0
        return f"xargs option {text} is not allowed"
    for position, letter in enumerate(text[1:], start=2):
        if letter in _XARGS_FLAGS:
            continue
        if letter in _XARGS_VALUES:
            return 0 if text[position:] else 1
        if letter in _XARGS_OPTIONAL:
            return 0
        return f"xargs option -{letter} is not allowed"
    return 0


def unwrap_timeout(args: Sequence[Word]) -> Unwrapped | str:
    """``timeout [OPTION] DURATION COMMAND...``: -s/-k/-v/--preserve-status/--foreground."""
    index = 0
    while index < len(args) and args[index].text.startswith("-"):
        text = args[index].text
        if problem := dynamic_argument("timeout", args[index:index + 2]):
            return problem
        index += 1
        if text == "--":
            break
        if text in ("-s", "--signal", "-k", "--kill-after"):
            index += 1
        elif not (text in ("-v", "--verbose", "--preserve-status", "--foreground")
                  or text.startswith(("-s", "-k", "--signal=", "--kill-after="))):
            return f"timeout option {text} is not allowed"
    if problem := dynamic_argument("timeout", args[index:index + 1]):
        return problem
    return Unwrapped(tuple(args[index + 1:]))


_NICE_NUMERIC = re.compile(r"-[0-9]+|--[0-9]+|-n-?[0-9]+|--adjustment=-?[0-9]+")


def unwrap_nice(args: Sequence[Word]) -> Unwrapped | str:
    """``nice [-n N | -N | --adjustment=N] [COMMAND...]``; bare ``nice`` prints the niceness."""
    index = 0
    while index < len(args) and args[index].text.startswith("-"):
        text = args[index].text
        if problem := dynamic_argument("nice", args[index:index + 2]):
            return problem
        index += 1
        if text == "--":
            break
        if text in ("-n", "--adjustment"):
            index += 1
        elif not _NICE_NUMERIC.fullmatch(text):
            return f"nice option {text} is not allowed"
    return Unwrapped(tuple(args[index:]))


def unwrap_time(args: Sequence[Word]) -> Unwrapped | str:
    """Bash's ``time [-p]``; anything else may be /usr/bin/time, whose ``-o`` writes a file."""
    index = 0
    while index < len(args) and args[index].text == "-p" and not args[index].dynamic:
        index += 1
    if index < len(args) and (args[index].dynamic or args[index].text.startswith("-")):
        return f"time option {args[index].raw} is not allowed"
    return Unwrapped(tuple(args[index:]))


def unwrap_command(args: Sequence[Word]) -> Unwrapped | str:
    """``command [-p] [-v|-V] NAME...``: with -v/-V it only describes NAME."""
    index = 0
    while index < len(args) and args[index].text.startswith("-"):
        text = args[index].text
        if problem := dynamic_argument("command", [args[index]]):
            return problem
        index += 1
        if text == "--":
            break
        if not set(text[1:]) <= set("pvV"):
            return f"command option {text} is not allowed"
        if set(text[1:]) & set("vV"):
            return Unwrapped(())
    return Unwrapped(tuple(args[index:]))


WRAPPERS: dict[str, Unwrap] = {
    "env": unwrap_env,
    "xargs": unwrap_xargs,
    "timeout": unwrap_timeout,
    "nice": unwrap_nice,
    "time": unwrap_time,
    "command": unwrap_command,
}
