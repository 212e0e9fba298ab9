"""Walk a parsed command line and find the first part that may not be read-only.

A line is read-only when every command in it is (pipelines and lists included), nothing runs in
the background, no assignment is unsafe, every command or process substitution is itself
read-only, and every output redirection goes to ``/dev/null`` (or ``/dev/stdout``,
``/dev/stderr``) or duplicates a descriptor (``2>&1``). Input redirections and here-documents
only read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.engine.tools.bash_readonly.allowlist import check_argv
from apps.engine.tools.bash_readonly.environment import assignment_problem
from apps.engine.tools.bash_readonly.parser import Command, Compound, Script, parse
from apps.engine.tools.bash_readonly.tokenizer import Redirect, ShellSyntaxError, Word, tokenize

__all__ = ["Analysis", "analyze", "is_read_only"]

_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_DUPLICATE = re.compile(r"[0-9]+-?|-")
_INPUT_OPS = frozenset({"<", "<&", "<<", "<<-", "<<<"})
_SUBSTITUTION_NAMES = {"$(": "$(...)", "`": "`...`", "<(": "<(...)", ">(": ">(...)"}


@dataclass(frozen=True)
class Analysis:
    """The verdict on one command line: ``reason`` names the culprit when not ``read_only``."""

    read_only: bool
    reason: str


def analyze(command: str) -> Analysis:
    """Decide whether the bash ``command`` line only reads; unknown or unparseable means no."""
    try:
        script = parse(tokenize(command))
        if not script.statements:
            return Analysis(False, "empty command")
        problem = _script_problem(script)
    except ShellSyntaxError as error:
        return Analysis(False, str(error))
    if problem:
        return Analysis(False, problem)
    return Analysis(True, "every command only reads")


def is_read_only(command: str) -> bool:
    """Whether :func:`analyze` finds ``command`` read-only."""
    return analyze(command).read_only


def _script_problem(script: Script) -> str | None:
    for statement in script.statements:
        if statement.background:
            return "a background job (&) keeps running after the command returns"
        for command in statement.commands:
            if problem := _command_problem(command):
                return problem
    return None


def _command_problem(command: Command) -> str | None:
    if isinstance(command, Compound):
        return _script_problem(command.body) or _redirects_problem(command.redirects)
    for word in (*command.assignments, *command.words):
        if problem := _substitutions_problem(word):
            return problem
    if problem := _redirects_problem(command.redirects):
        return problem
    exported = bool(command.words)
    for assignment in command.assignments:
        if problem := assignment_problem(assignment, exported=exported):
            return problem
    return check_argv(command.words) if command.words else None


def _substitutions_problem(word: Word) -> str | None:
    """Why a command or process substitution inside ``word`` may not be read-only, or None."""
    for substitution in word.substitutions:
        inner = parse(substitution.tokens)
        if problem := _script_problem(inner):
            return f"{_SUBSTITUTION_NAMES[substitution.kind]} substitution: {problem}"
    return None


def _redirects_problem(redirects: tuple[Redirect, ...]) -> str | None:
    for redirect in redirects:
        for word in (redirect.target, redirect.heredoc):
            if word is not None and (problem := _substitutions_problem(word)):
                return problem
        if problem := _redirect_problem(redirect):
            return problem
    return None


def _redirect_problem(redirect: Redirect) -> str | None:
    target = redirect.target
    if target.text.startswith(("/dev/tcp/", "/dev/udp/")):
        return f"redirection to {target.text} opens a network connection"
    if redirect.op in _INPUT_OPS:
        return None
    if redirect.op == "<>":
        return f"redirection <> opens {target.raw} for writing"
    if target.dynamic:
        return f"output redirection to {target.raw}, which is only known at run time"
    if redirect.op == ">&" and _DUPLICATE.fullmatch(target.text):
        return None  # 2>&1, >&2, >&-: descriptors, not files
    if target.text in _SINKS:
        return None
    return f"output redirection to {target.text}"
