"""sed: read-only unless it edits in place, writes files or runs commands.

The rule (GNU sed 4.9; sed(1) and the GNU manual, "sed scripts"):

- options: ``-n -E -r -s -z -u -l N -e SCRIPT`` and their long forms are fine; ``-i``/
  ``--in-place`` edits files and ``-f``/``--file`` hides the script in a file, so both are
  refused, as is any option not listed;
- the script is parsed command by command, not searched for letters: ``w``/``W`` (write a
  file), ``e`` (run a command) and the ``s`` flags ``w`` and ``e`` are refused; ``r``/``R`` only
  read and are fine; anything the parser does not recognise is refused;
- a regex delimiter inside a bracket expression (``s/[/]/x/``) is refused: GNU sed 4.x reads
  it as a literal, older seds as the end of the regex, so the two would see different commands;
- where sed versions differ on where a label or file name ends, the shorter reading is taken
  and what follows must then be a separator, so no command can hide in a label.
"""

from __future__ import annotations

from collections.abc import Sequence

from apps.engine.tools.bash_readonly.options import dynamic_argument
from apps.engine.tools.bash_readonly.tokenizer import Word

__all__ = ["check_sed", "script_problem"]

_SHORT_FLAGS = frozenset("nErszu")
_LONG_FLAGS = frozenset({
    "quiet", "silent", "regexp-extended", "separate", "null-data", "zero-terminated",
    "unbuffered", "posix", "debug", "sandbox", "follow-symlinks", "help", "version",
})
_IN_PLACE = "sed -i edits files in place"
_FILE = "sed -f reads its script from a file, which is not analyzed"

_NO_ARGUMENT = frozenset("=dDgGhHnNpPxzF")
_OPTIONAL_NUMBER = frozenset("qQlL")
_REFUSED = {
    "w": "sed script command w writes a file",
    "W": "sed script command W writes a file",
    "e": "sed script command e runs a shell command",
}


class _Refused(Exception):
    pass


def check_sed(args: Sequence[Word]) -> str | None:
    """Why ``sed args`` may not be read-only, or None."""
    if problem := dynamic_argument("sed", args):
        return problem
    texts = [w.text for w in args]
    scripts: list[str] = []
    operands: list[str] = []
    index = 0
    try:
        while index < len(texts):
            text = texts[index]
            index += 1
            if text == "--":
                operands += texts[index:]
                break
            if text.startswith("--"):
                index = _long_option(text, texts, index, scripts)
            elif text.startswith("-") and text != "-":
                index = _short_options(text, texts, index, scripts)
            else:
                operands.append(text)
    except _Refused as refused:
        return str(refused)
    if not scripts and not operands:
        return "sed without a script"
    return script_problem("\n".join(scripts or operands[:1]))


def _long_option(text: str, texts: list[str], index: int, scripts: list[str]) -> int:
    """Handle ``--name[=value]`` (GNU accepts any unambiguous prefix); return the next index."""
    name, has_value, value = text[2:].partition("=")
    if "in-place".startswith(name):
        raise _Refused(_IN_PLACE)
    if "file".startswith(name):
        raise _Refused(_FILE)
    if name in ("expression", "line-length"):
        if not has_value:
            if index >= len(texts):
                raise _Refused(f"sed {text} needs a value")
            value, index = texts[index], index + 1
        if name == "expression":
            scripts.append(value)
        return index
    if name not in _LONG_FLAGS:
        raise _Refused(f"sed option {text} is not allowed")
    return index


def _short_options(text: str, texts: list[str], index: int, scripts: list[str]) -> int:
    """Handle a cluster such as ``-ne SCRIPT``; return the next index."""
    for position, letter in enumerate(text[1:], start=2):
        if letter in _SHORT_FLAGS:
            continue
        if letter == "i":
            raise _Refused(_IN_PLACE)
        if letter == "f":
            raise _Refused(_FILE)
        if letter not in "el":
            raise _Refused(f"sed option -{letter} is not allowed")
        value = text[position:]
        if not value:
            if index >= len(texts):
                raise _Refused(f"sed -{letter} needs a value")
            value, index = texts[index], index + 1
        if letter == "e":
            scripts.append(value)
        return index
    return index


def script_problem(script: str) -> str | None:
    """Why the sed ``script`` may write or run something, or None."""
    try:
        _ScriptParser(script).parse()
    except _Refused as refused:
        return str(refused)
    return None


class _ScriptParser:
    """A strict reader of sed scripts: each command is recognised or the script is refused."""

    def __init__(self, script: str) -> None:
        self.s = script
        self.pos = 0
        self.depth = 0

    def parse(self) -> None:
        while True:
            self._skip(" \t\n;")
            if self.pos >= len(self.s):
                break
            self._command()
        if self.depth:
            raise _Refused("sed script has an unmatched {")

    def _command(self) -> None:
        char = self.s[self.pos]
        if char == "#":
            self._to_end_of_line()
        elif char == "}":
            self.depth -= 1
            if self.depth < 0:
                raise _Refused("sed script has an unmatched }")
            self.pos += 1
            self._end()
        elif char == ":":
            self.pos += 1
            self._label(required=True)
        else:
            self._address()
            self._skip(" \t!")
            self._function()

    def _function(self) -> None:
        if self.pos >= len(self.s):
            raise _Refused("sed script has an address without a command")
        char = self.s[self.pos]
        self.pos += 1
        if char in _REFUSED:
            raise _Refused(_REFUSED[char])
        if char == "{":
            self.depth += 1
        elif char in _NO_ARGUMENT:
            self._end()
        elif char in _OPTIONAL_NUMBER:
            self._skip(" \t")
            self._skip("0123456789")
            self._end()
        elif char in "aic":
            self._text()
        elif char in "btTv":  # v takes an optional version, read like a label
            self._skip(" \t")
            self._label(required=False)
        elif char in "rR":
            self._read_file_name()
        elif char == "s":
            self._substitute()
        elif char == "y":
            delimiter = self._delimiter()
            self._plain_part(delimiter)
            self._plain_part(delimiter)
            self._end()
        else:
            raise _Refused(f"sed script command {char!r} is not recognised")

    def _address(self) -> None:
        if not self._one_address(second=False):
            return
        if self.s.startswith(",", self.pos):
            self.pos += 1
            if not self._one_address(second=True):
                raise _Refused("sed script has an incomplete address range")

    def _one_address(self, *, second: bool) -> bool:
        char = self.s[self.pos:self.pos + 1]
        if char and (char in "0123456789" or (second and char in "+~")):
            self.pos += 1
            self._skip("0123456789")
            if self.s.startswith("~", self.pos):
                self.pos += 1
                self._skip("0123456789")
            return True
        if char == "$":
            self.pos += 1
            return True
        if char and char in "/\\":
            if char == "\\":
                self.pos += 1
                delimiter = self._delimiter()
            else:
                delimiter, self.pos = "/", self.pos + 1
            self._regex(delimiter)
            self._skip("IM")
            return True
        return False

    def _substitute(self) -> None:
        delimiter = self._delimiter()
        self._regex(delimiter)
        self._plain_part(delimiter)
        while self.pos < len(self.s):
            flag = self.s[self.pos]
            if flag == "w":
                raise _Refused("sed s///w writes a file")
            if flag == "e":
                raise _Refused("sed s///e runs the result as a shell command")
            if not (flag in "gpiImM" or flag.isdigit()):
                break
            self.pos += 1
        self._end()

    def _delimiter(self) -> str:
        char = self.s[self.pos:self.pos + 1]
        if char in ("", "\n", "\\"):
            raise _Refused("sed script has a missing or invalid delimiter")
        self.pos += 1
        return char

    def _regex(self, delimiter: str) -> None:
        """Skip a regex through its closing ``delimiter``, bracket expressions included."""
        while self.pos < len(self.s):
            char = self.s[self.pos]
            if char == "\\":
                self.pos += 2
            elif char == delimiter:
                self.pos += 1
                return
            elif char == "[":
                self._bracket(delimiter)
            else:
                self.pos += 1
        raise _Refused("sed script has an unterminated regex")

    def _bracket(self, delimiter: str) -> None:
        index = self.pos + 1
        index += self.s.startswith("^", index)
        index += self.s.startswith("]", index)
        while index < len(self.s):
            if self.s.startswith(("[:", "[.", "[="), index):
                close = self.s.find(self.s[index + 1] + "]", index + 2)
                index = len(self.s) if close < 0 else close + 2
                continue
            char = self.s[index]
            if char == delimiter:
                raise _Refused(
                    "sed regex has its delimiter inside [...], which sed versions read differently"
                )
            if char == "]":
                self.pos = index + 1
                return
            index += 1
        raise _Refused("sed script has an unterminated bracket expression")

    def _plain_part(self, delimiter: str) -> None:
        """Skip a replacement or ``y`` part: backslash escapes, no bracket expressions."""
        while self.pos < len(self.s):
            char = self.s[self.pos]
            self.pos += 2 if char == "\\" else 1
            if char == delimiter:
                return
        raise _Refused("sed script has an unterminated s or y command")

    def _text(self) -> None:
        """``a``/``i``/``c`` text: to the first newline not escaped by a backslash."""
        while self.pos < len(self.s):
            char = self.s[self.pos]
            self.pos += 2 if char == "\\" else 1
            if char == "\n":
                return

    def _label(self, *, required: bool) -> None:
        start = self.pos
        self._skip_until(" \t;\n}")
        if required and self.pos == start:
            raise _Refused("sed script has a label without a name")
        self._end()

    def _read_file_name(self) -> None:
        start = self.pos
        self._to_end_of_line()
        if ";" in self.s[start:self.pos]:
            # GNU reads the name to the end of the line; a sed that stopped at ';' would run
            # what follows, so refuse rather than pick one reading
            raise _Refused("sed r/R file name contains ';'")

    def _end(self) -> None:
        """After a command: blanks, then a separator, '}', a comment or the end."""
        self._skip(" \t")
        if self.pos < len(self.s) and self.s[self.pos] not in ";\n}#":
            raise _Refused(f"sed script has unexpected text {self.s[self.pos:self.pos + 10]!r}")

    def _skip(self, chars: str) -> None:
        while self.pos < len(self.s) and self.s[self.pos] in chars:
            self.pos += 1

    def _skip_until(self, chars: str) -> None:
        while self.pos < len(self.s) and self.s[self.pos] not in chars:
            self.pos += 1

    def _to_end_of_line(self) -> None:
        self._skip_until("\n")
