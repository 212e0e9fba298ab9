"""Group tokens into the commands bash would run (bash(1), SHELL GRAMMAR).

The grammar kept is the part the analyzer judges: lists (``;``, ``&``, newlines), and-or lists
(``&&``, ``||``), pipelines (``|``, ``|&``, a leading ``!``), subshells ``( ... )``, groups
``{ ...; }`` and simple commands with their assignments and redirections. Keywords such as ``if``
or ``for`` stay plain words here; the allowlist refuses them. Anything else that is not valid
bash (``f() ...``, ``ls |``, an unmatched ``)``) raises :class:`ShellSyntaxError`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from apps.engine.tools.bash_readonly.tokenizer import (
    Operator,
    Redirect,
    ShellSyntaxError,
    Token,
    Word,
)

__all__ = ["Command", "Compound", "Script", "SimpleCommand", "Statement", "parse"]

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
MAX_DEPTH = 32
"""Deepest nesting of subshells and groups accepted."""

_ENDS_COMMAND = frozenset({";", "&", "\n", "|", "|&", "&&", "||", ")"})


@dataclass(frozen=True)
class SimpleCommand:
    """``NAME=value ... word ... [redirections]``; ``words`` may be empty (assignments only)."""

    assignments: tuple[Word, ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]


@dataclass(frozen=True)
class Compound:
    """A subshell ``( ... )`` or a group ``{ ...; }`` with the redirections after it."""

    kind: str
    body: Script
    redirects: tuple[Redirect, ...]


Command = SimpleCommand | Compound


@dataclass(frozen=True)
class Statement:
    """One and-or list: every command in it (across ``|``, ``&&``, ``||``), run in background
    when it ends with ``&``."""

    commands: tuple[Command, ...]
    background: bool


@dataclass(frozen=True)
class Script:
    """A command list, in order."""

    statements: tuple[Statement, ...]


def is_assignment(word: Word) -> bool:
    """Whether ``word`` spells ``NAME=value`` with an unquoted name (bash's assignment word)."""
    return _ASSIGNMENT.match(word.raw) is not None


def parse(tokens: Sequence[Token]) -> Script:
    """The script ``tokens`` spell; raises :class:`ShellSyntaxError` on invalid syntax."""
    parser = _Parser(tokens)
    script = parser.script(closing=None)
    if parser.peek() is not None:
        raise ShellSyntaxError(f"unexpected {_describe(parser.peek())}")
    return script


class _Parser:
    def __init__(self, tokens: Sequence[Token]) -> None:
        self.tokens = tokens
        self.index = 0
        self.depth = 0

    def peek(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def script(self, *, closing: str | None) -> Script:
        """Statements up to the end of input or up to ``closing`` (``)`` or ``}``)."""
        statements: list[Statement] = []
        self._skip_newlines()
        while self.peek() is not None and not self._at_closing(closing):
            commands = self._and_or()
            token = self.peek()
            separator = token.op if isinstance(token, Operator) and token.op in ";&\n" else None
            statements.append(Statement(tuple(commands), background=separator == "&"))
            if separator is None:
                break
            self.take()
            self._skip_newlines()
        return Script(tuple(statements))

    def _and_or(self) -> list[Command]:
        commands = self._pipeline()
        while self._at_operator("&&", "||"):
            self.take()
            self._skip_newlines()
            commands += self._pipeline()
        return commands

    def _pipeline(self) -> list[Command]:
        token = self.peek()
        if isinstance(token, Word) and token.raw == "!":
            self.take()  # negation changes the exit status only
        commands = [self._command()]
        while self._at_operator("|", "|&"):
            self.take()
            self._skip_newlines()
            commands.append(self._command())
        return commands

    def _command(self) -> Command:
        token = self.peek()
        if isinstance(token, Operator) and token.op == "(":
            self.take()
            return self._compound("subshell", ")")
        if isinstance(token, Word) and token.raw == "{":
            self.take()
            return self._compound("group", "}")
        return self._simple()

    def _compound(self, kind: str, closing: str) -> Compound:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ShellSyntaxError("subshells and groups are nested too deeply")
        body = self.script(closing=closing)
        self.depth -= 1
        if not body.statements:
            raise ShellSyntaxError(f"empty {kind}")
        if not self._at_closing(closing):
            raise ShellSyntaxError(f"missing {closing!r}")
        self.take()
        redirects: list[Redirect] = []
        while isinstance(self.peek(), Redirect):
            redirects.append(self.take())  # type: ignore[arg-type]
        if isinstance(self.peek(), Word):
            raise ShellSyntaxError(f"unexpected {_describe(self.peek())} after {closing!r}")
        return Compound(kind, body, tuple(redirects))

    def _simple(self) -> SimpleCommand:
        assignments: list[Word] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        while (token := self.peek()) is not None:
            if isinstance(token, Operator):
                if token.op not in _ENDS_COMMAND:
                    raise ShellSyntaxError(f"unexpected {_describe(token)}")
                break
            self.take()
            if isinstance(token, Redirect):
                redirects.append(token)
            elif not words and is_assignment(token):
                assignments.append(token)
            else:
                words.append(token)
        if not (assignments or words or redirects):
            raise ShellSyntaxError(f"unexpected {_describe(token) if token else 'end of command'}")
        return SimpleCommand(tuple(assignments), tuple(words), tuple(redirects))

    def _at_operator(self, *ops: str) -> bool:
        token = self.peek()
        return isinstance(token, Operator) and token.op in ops

    def _at_closing(self, closing: str | None) -> bool:
        token = self.peek()
        if closing == ")":
            return isinstance(token, Operator) and token.op == ")"
        # '}' closes a group only where a command could start, as an unquoted word
        return closing == "}" and isinstance(token, Word) and token.raw == "}"

    def _skip_newlines(self) -> None:
        while self._at_operator("\n"):
            self.take()


def _describe(token: Token | None) -> str:
    if isinstance(token, Operator):
        return "newline" if token.op == "\n" else repr(token.op)
    if isinstance(token, Word):
        return repr(token.raw)
    if isinstance(token, Redirect):
        return repr(token.op)
    return "end of command"
