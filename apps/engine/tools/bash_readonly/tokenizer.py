"""Split a command line into bash tokens, exactly enough to judge what it runs.

The rules follow bash(1), sections QUOTING, EXPANSION, REDIRECTION and Here Documents:

- quoting: ``'...'``, ``"..."`` (where ``\\`` escapes only ``$ ` " \\`` and newline), ``$'...'``
  (ANSI-C escapes, decoded), ``$"..."`` (read as ``"..."``), backslash escapes, line continuations
  and ``#`` comments;
- operators ``| |& || && ; &`` newline ``( )``, and redirections ``[N]> [N]>> [N]>| [N]< [N]<>
  [N]>& [N]<& &> &>> << <<- <<<`` with the here-document bodies read after the line;
- command substitution ``$(...)`` and ``\\`...\\```, process substitution ``<(...)`` ``>(...)``:
  their contents are tokenized recursively and kept on the word (:attr:`Word.substitutions`);
- which words have a value only known at run time (:attr:`Word.dynamic`): parameter expansion,
  unquoted globs and brace expansion.

What the analyzer cannot see through raises :class:`ShellSyntaxError` instead of being guessed:
arithmetic expansion, parameter expansions past the plain forms (``${!x}``, ``${x@P}``, ``${x:1}``,
``${a[i]}``: bash evaluates subscripts and prompt strings, which can run commands stored in a
variable), ``;;`` outside ``case``, named-fd redirections ``{fd}>``, and line continuations inside
an unquoted here-document (bash joins them before looking for the delimiter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

__all__ = ["Operator", "Redirect", "ShellSyntaxError", "Substitution", "Token", "Word", "tokenize"]

MAX_NESTING = 16
"""Deepest command substitution accepted; deeper input is refused rather than recursed into."""

_BLANKS = " \t"
_WORD_END = frozenset(" \t\n;&|()<>")
_OPERATORS = ("&&", "||", ";;", ";&", "|&", "&", "|", ";", "(", ")")
_REDIRECTS = ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">&", ">|", "<", ">")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAM = re.compile(r"#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!0-9-])")
_PARAM_OPS = (":-", ":+", ":?", "##", "%%", "-", "+", "?", "#", "%")
_FD = re.compile(r"[0-9]+")
_NAMED_FD = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_OCTAL = re.compile(r"[0-7]{1,3}")
_HEX = {"x": re.compile(r"[0-9A-Fa-f]{1,2}"), "u": re.compile(r"[0-9A-Fa-f]{1,4}"),
        "U": re.compile(r"[0-9A-Fa-f]{1,8}")}
_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


class ShellSyntaxError(ValueError):
    """The line cannot be tokenized or parsed exactly; ``str()`` is the reason for a person."""


@dataclass(frozen=True)
class Substitution:
    """A command list bash runs while expanding a word; ``kind``: ``$(`` ````` ``<(`` ``>(``."""

    kind: str
    tokens: tuple[Token, ...]


@dataclass(frozen=True)
class Word:
    """One shell word.

    ``text`` is the value after quote removal, with expansions kept in their source spelling;
    ``raw`` is the source spelling. ``dynamic`` says the value is only known at run time;
    ``quoted`` says some part was quoted or escaped (so it is never a reserved word).
    """

    text: str
    raw: str
    dynamic: bool = False
    quoted: bool = False
    substitutions: tuple[Substitution, ...] = ()


@dataclass(frozen=True)
class Operator:
    """A control operator: ``| |& || && ; &``, a newline ``\\n``, ``(`` or ``)``."""

    op: str


@dataclass(frozen=True)
class Redirect:
    """``[fd]op target``; for ``<<``/``<<-`` the body is ``heredoc`` (filled after the line)."""

    op: str
    target: Word
    fd: str | None = None
    heredoc: Word | None = None


Token = Word | Operator | Redirect


def tokenize(command: str) -> tuple[Token, ...]:
    """The tokens of ``command``; raises :class:`ShellSyntaxError` with a reason."""
    return tuple(_Lexer(command, 0, 0).run())


@dataclass
class _WordBuilder:
    text: list[str] = field(default_factory=list)
    dynamic: bool = False
    quoted: bool = False
    substitutions: list[Substitution] = field(default_factory=list)
    # unquoted characters that make globs and brace expansion, checked when the word ends
    unquoted: list[str] = field(default_factory=list)

    def literal(self, chars: str, *, quoted: bool) -> None:
        self.text.append(chars)
        if quoted:
            self.quoted = True
        else:
            self.unquoted.append(chars)

    def build(self, raw: str) -> Word:
        bare = "".join(self.unquoted)
        glob = any(c in bare for c in "*?") or ("[" in bare and "]" in bare.split("[", 1)[1])
        brace = "{" in bare and "}" in bare and ("," in raw or ".." in raw)
        return Word("".join(self.text), raw, self.dynamic or glob or brace, self.quoted,
                    tuple(self.substitutions))


@dataclass
class _HereDoc:
    index: int
    delimiter: str
    strip_tabs: bool
    expand: bool


class _Lexer:
    """Reads tokens from ``src`` starting at ``pos``; nested substitutions get their own lexer."""

    def __init__(self, src: str, pos: int, depth: int) -> None:
        if depth > MAX_NESTING:
            raise ShellSyntaxError("command substitutions are nested too deeply")
        self.src = src
        self.pos = pos
        self.depth = depth
        self.parameters = 0  # ${...} currently open, nested through their words

    def run(self, *, closing: bool = False) -> list[Token]:
        """Tokens up to the end, or up to the ``)`` closing a substitution when ``closing``."""
        tokens: list[Token] = []
        pending: list[_HereDoc] = []
        parens = 0
        while True:
            self._skip_blanks()
            if self.pos >= len(self.src):
                if closing:
                    raise ShellSyntaxError("unterminated $( or <( substitution")
                break
            char = self.src[self.pos]
            if char == "#":
                self._skip_comment()
            elif char == "\n":
                self.pos += 1
                tokens.append(Operator("\n"))
                self._read_heredocs(tokens, pending)
            elif closing and char == ")" and parens == 0:
                self.pos += 1
                break
            else:
                parens += self._token(tokens, pending)
        if pending:
            raise ShellSyntaxError(f"unterminated here-document (no {pending[0].delimiter!r} line)")
        return tokens

    def _token(self, tokens: list[Token], pending: list[_HereDoc]) -> int:
        """Append the next token; return the change in ``(`` depth it makes."""
        if not self._at_process_substitution():
            op = self._match(_REDIRECTS)
            if op:
                self._redirect(tokens, pending, op, None)
                return 0
            op = self._match(_OPERATORS)
            if op:
                if op in (";;", ";&"):
                    raise ShellSyntaxError(f"{op!r} belongs to case, which is not analyzed")
                self.pos += len(op)
                tokens.append(Operator(op))
                return {"(": 1, ")": -1}.get(op, 0)
        word = self._word()
        op = self._match(_REDIRECTS)
        if op and _FD.fullmatch(word.raw):
            self._redirect(tokens, pending, op, word.raw)
        elif op and _NAMED_FD.fullmatch(word.raw):
            raise ShellSyntaxError(f"named descriptor redirection {word.raw}{op} is not analyzed")
        else:
            tokens.append(word)
        return 0

    def _redirect(
        self, tokens: list[Token], pending: list[_HereDoc], op: str, fd: str | None
    ) -> None:
        self.pos += len(op)
        self._skip_blanks()
        if self.pos >= len(self.src) or (
            self.src[self.pos] in _WORD_END and not self._at_process_substitution()
        ):
            raise ShellSyntaxError(f"redirection {op} has no target")
        target = self._word()
        if op in ("<<", "<<-"):
            pending.append(_HereDoc(len(tokens), target.text, op == "<<-", not target.quoted))
        tokens.append(Redirect(op, target, fd))

    def _read_heredocs(self, tokens: list[Token], pending: list[_HereDoc]) -> None:
        """Read the bodies of the here-documents started on the line that just ended."""
        for doc in pending:
            body = self._heredoc_body(doc)
            if doc.expand:
                word = _Lexer(body, 0, self.depth + 1).expanding_text()
            else:
                word = Word(body, body)
            redirect = tokens[doc.index]
            assert isinstance(redirect, Redirect)
            tokens[doc.index] = replace(redirect, heredoc=word)
        pending.clear()

    def _heredoc_body(self, doc: _HereDoc) -> str:
        lines: list[str] = []
        while self.pos < len(self.src):
            end = self.src.find("\n", self.pos)
            end = len(self.src) if end < 0 else end
            line = self.src[self.pos:end]
            self.pos = end + 1
            if doc.strip_tabs:
                line = line.lstrip("\t")
            if line == doc.delimiter:
                return "".join(f"{text}\n" for text in lines)
            if doc.expand and line.endswith("\\"):
                # bash joins the next line before comparing with the delimiter
                raise ShellSyntaxError("line continuation inside a here-document is not analyzed")
            lines.append(line)
        raise ShellSyntaxError(f"unterminated here-document (no {doc.delimiter!r} line)")

    # -- words ---------------------------------------------------------------------------------

    def _word(self) -> Word:
        start = self.pos
        word = _WordBuilder()
        while self.pos < len(self.src):
            char = self.src[self.pos]
            if self._at_process_substitution():
                self._substitution(word, char + "(", self.pos + 2)
            elif char in _WORD_END:
                break
            elif char == "\\":
                self._escape(word)
            elif char == "'":
                self._single_quoted(word)
            elif char == '"':
                self.pos += 1
                self._double_quoted(word, end='"')
            elif char == "$":
                self._dollar(word, in_quotes=False)
            elif char == "`":
                self._backticks(word, in_quotes=False)
            else:
                word.literal(char, quoted=False)
                self.pos += 1
        return word.build(self.src[start:self.pos])

    def expanding_text(self) -> Word:
        """The whole source read as an unquoted here-document body (expansions, no quotes)."""
        word = _WordBuilder()
        self._double_quoted(word, end=None)
        return word.build(self.src)

    def _escape(self, word: _WordBuilder) -> None:
        if self.pos + 1 >= len(self.src):
            raise ShellSyntaxError("the command ends with a lone backslash")
        nxt = self.src[self.pos + 1]
        if nxt != "\n":  # backslash-newline is a line continuation: both vanish
            word.literal(nxt, quoted=True)
        word.quoted = True
        self.pos += 2

    def _single_quoted(self, word: _WordBuilder) -> None:
        end = self.src.find("'", self.pos + 1)
        if end < 0:
            raise ShellSyntaxError("unterminated single quote")
        word.literal(self.src[self.pos + 1:end], quoted=True)
        self.pos = end + 1

    def _double_quoted(self, word: _WordBuilder, *, end: str | None) -> None:
        """Read ``"..."`` content after the quote (``end='"'``) or a here-document body."""
        escapable = ("$", "`", '"', "\\", "\n") if end else ("$", "`", "\\", "\n")
        word.quoted = word.quoted or end is not None
        while self.pos < len(self.src):
            char = self.src[self.pos]
            if char == end:
                self.pos += 1
                return
            if char == "\\" and self.src[self.pos + 1:self.pos + 2] in escapable:
                if self.src[self.pos + 1] != "\n":
                    word.literal(self.src[self.pos + 1], quoted=True)
                self.pos += 2
            elif char == "$":
                self._dollar(word, in_quotes=True)
            elif char == "`":
                self._backticks(word, in_quotes=end is not None)
            else:
                word.literal(char, quoted=True)
                self.pos += 1
        if end:
            raise ShellSyntaxError("unterminated double quote")

    # -- expansions ----------------------------------------------------------------------------

    def _dollar(self, word: _WordBuilder, *, in_quotes: bool) -> None:
        nxt = self.src[self.pos + 1:self.pos + 2]
        if self.src.startswith("$((", self.pos) or nxt == "[":
            raise ShellSyntaxError("arithmetic expansion is not analyzed")
        if nxt == "(":
            self._substitution(word, "$(", self.pos + 2)
        elif nxt == "{":
            self._braced_parameter(word)
        elif nxt == "'" and not in_quotes:
            self._ansi_c(word)
        elif nxt == '"' and not in_quotes:
            self.pos += 2  # $"..." is a translated string: read it as "..."
            self._double_quoted(word, end='"')
        elif nxt and (_NAME.match(nxt) or nxt in "0123456789@*#?$!-"):
            match = _NAME.match(self.src, self.pos + 1)
            end = match.end() if match else self.pos + 2
            word.literal(self.src[self.pos:end], quoted=in_quotes)
            word.dynamic = True
            self.pos = end
        else:
            word.literal("$", quoted=in_quotes)
            self.pos += 1

    def _substitution(self, word: _WordBuilder, kind: str, body_start: int) -> None:
        """``$(``, ``<(`` or ``>(``: tokenize the body up to its matching ``)``."""
        start = self.pos
        inner = _Lexer(self.src, body_start, self.depth + 1)
        tokens = inner.run(closing=True)
        self.pos = inner.pos
        word.text.append(self.src[start:self.pos])
        word.substitutions.append(Substitution(kind, tuple(tokens)))
        word.dynamic = True

    def _backticks(self, word: _WordBuilder, *, in_quotes: bool) -> None:
        """Old-style substitution: ``\\`` escapes only ``$ ` \\`` (and ``"`` inside quotes)."""
        special = '$`\\"' if in_quotes else "$`\\"
        body: list[str] = []
        index = self.pos + 1
        while index < len(self.src) and self.src[index] != "`":
            pair = self.src[index:index + 2]
            if pair[:1] == "\\" and len(pair) == 2:
                body.append(pair[1] if pair[1] in special else pair)
                index += 2
            else:
                body.append(self.src[index])
                index += 1
        if index >= len(self.src):
            raise ShellSyntaxError("unterminated backquote")
        tokens = _Lexer("".join(body), 0, self.depth + 1).run()
        word.text.append(self.src[self.pos:index + 1])
        word.substitutions.append(Substitution("`", tuple(tokens)))
        word.dynamic = True
        self.pos = index + 1

    def _braced_parameter(self, word: _WordBuilder) -> None:
        """``${name}``, ``${#name}`` and ``${name<op>word}`` for the plain ops; nothing else."""
        start, parts = self.pos, len(word.text)
        self.parameters += 1
        if self.parameters > MAX_NESTING:
            raise ShellSyntaxError("parameter expansions are nested too deeply")
        match = _PARAM.match(self.src, self.pos + 2)
        if match is None:
            raise ShellSyntaxError(f"parameter expansion {self._snippet()} is not analyzed")
        self.pos = match.end()
        if self.pos >= len(self.src):
            raise ShellSyntaxError("unterminated ${")
        if self.src[self.pos] != "}":
            op = self._match(_PARAM_OPS)
            length_of = match.group().startswith("#") and len(match.group()) > 1  # ${#x...}
            if op is None or length_of:
                snippet = self._snippet(start)
                raise ShellSyntaxError(f"parameter expansion {snippet} is not analyzed")
            self.pos += len(op)
            self._parameter_word(word)
        self.pos += 1
        del word.text[parts:]  # nested expansions added their own spelling; keep the whole
        word.text.append(self.src[start:self.pos])
        word.dynamic = True
        self.parameters -= 1

    def _parameter_word(self, word: _WordBuilder) -> None:
        """The word in ``${x:-word}``: plain text, nested expansions and substitutions, no quoting.

        Quotes inside ``${...}`` mean different things inside and outside double quotes, so the
        analyzer refuses them rather than guess which reading bash takes.
        """
        while self.pos < len(self.src) and self.src[self.pos] != "}":
            char = self.src[self.pos]
            if self._at_process_substitution():  # bash runs these inside ${x:-word} too
                self._substitution(word, char + "(", self.pos + 2)
                continue
            if char in "'\"`\\":
                raise ShellSyntaxError("quoting inside ${...} is not analyzed")
            if char == "$":
                if self.src[self.pos + 1:self.pos + 2] in ("'", '"'):
                    raise ShellSyntaxError("quoting inside ${...} is not analyzed")
                self._dollar(word, in_quotes=True)
            else:
                self.pos += 1
        if self.pos >= len(self.src):
            raise ShellSyntaxError("unterminated ${")

    def _ansi_c(self, word: _WordBuilder) -> None:
        """``$'...'``, decoded as bash does; values bash may render differently are dynamic."""
        index = self.pos + 2
        out: list[str] = []
        while index < len(self.src) and self.src[index] != "'":
            if self.src[index] != "\\" or index + 1 >= len(self.src):
                out.append(self.src[index])
                index += 1
                continue
            decoded, index, exact = _ansi_escape(self.src, index + 1)
            out.append(decoded)
            word.dynamic = word.dynamic or not exact
        if index >= len(self.src):
            raise ShellSyntaxError("unterminated $'...' quote")
        word.literal("".join(out), quoted=True)
        self.pos = index + 1

    # -- helpers -------------------------------------------------------------------------------

    def _at_process_substitution(self) -> bool:
        return self.src.startswith(("<(", ">("), self.pos)

    def _match(self, choices: tuple[str, ...]) -> str | None:
        return next((op for op in choices if self.src.startswith(op, self.pos)), None)

    def _skip_blanks(self) -> None:
        while self.pos < len(self.src):
            if self.src[self.pos] in _BLANKS:
                self.pos += 1
            elif self.src.startswith("\\\n", self.pos):
                self.pos += 2
            else:
                return

    def _skip_comment(self) -> None:
        end = self.src.find("\n", self.pos)
        self.pos = len(self.src) if end < 0 else end

    def _snippet(self, start: int | None = None) -> str:
        start = self.pos if start is None else start
        end = self.src.find("}", start)
        return self.src[start:end + 1] if end >= 0 else self.src[start:start + 20]


def _ansi_escape(src: str, index: int) -> tuple[str, int, bool]:
    """Decode the escape whose letter is at ``index``: (text, next index, exact).

    Not exact: NUL (bash cuts the string there), bytes and code points past ASCII (they depend
    on the locale) and ``\\c`` control characters.
    """
    letter = src[index]
    if letter in _ANSI_SIMPLE:
        return _ANSI_SIMPLE[letter], index + 1, True
    if letter in "01234567":
        digits = _OCTAL.match(src, index)
        assert digits is not None
        value = int(digits.group(), 8)
        return chr(value & 0xFF), digits.end(), 0 < value < 0x80
    if letter in _HEX:
        digits = _HEX[letter].match(src, index + 1)
        if digits is None:
            return "\\" + letter, index + 1, True
        value = int(digits.group(), 16)
        valid = value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF  # no lone surrogates
        text = chr(value) if valid else "\ufffd"
        return text, digits.end(), 0 < value < 0x80
    if letter == "c":  # a control character; the letter after it is kept (the word is dynamic)
        return "", index + 1, False
    return "\\" + letter, index + 1, True
