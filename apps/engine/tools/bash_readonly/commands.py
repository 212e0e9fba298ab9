"""Flag validation for the read-only commands that have a writing or program-running option.

Each check gets the arguments after the command name and returns why they may not be read-only,
or None. Commands whose every option only reads need no check (see ``allowlist``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from apps.engine.tools.bash_readonly.options import deny_options, dynamic_argument
from apps.engine.tools.bash_readonly.tokenizer import Word

__all__ = [
    "check_awk", "check_date", "check_file", "check_find", "check_hostname", "check_printf",
    "check_rg", "check_sort", "check_test", "check_tree", "check_uniq", "check_xxd", "check_yq",
]

_FIND_ACTIONS = {
    "-delete": "deletes files",
    "-exec": "runs other commands",
    "-execdir": "runs other commands",
    "-ok": "runs other commands",
    "-okdir": "runs other commands",
    "-fls": "writes to a file",
}


def check_find(args: Sequence[Word]) -> str | None:
    """find without actions that delete, run commands or write files (``-fprint*``, ``-fls``)."""
    if problem := dynamic_argument("find", args):
        return problem
    for word in args:
        if word.text in _FIND_ACTIONS:
            return f"find {word.text} {_FIND_ACTIONS[word.text]}"
        if word.text.startswith("-fprint"):
            return f"find {word.text} writes to a file"
    return None


# Inside an awk program these can run commands (system(), "cmd" | getline, print | "cmd"),
# write files (print > "f"), or load code (gawk @load, @include, and @f() indirect calls, which
# reach system() by name). The check is textual, so `$1 > 5` is refused too: a comparison and
# a redirection look alike without a full awk parser.
_AWK_FORBIDDEN = re.compile(r"system|\||>|@")


def check_awk(args: Sequence[Word]) -> str | None:
    """awk with an inline program free of ``system``, ``|``, ``>`` and ``@``; only -F and -v."""
    if problem := dynamic_argument("awk", args):
        return problem
    texts = [w.text for w in args]
    index = 0
    while index < len(texts) and texts[index].startswith("-") and texts[index] != "-":
        text = texts[index]
        if text == "--":
            index += 1
            break
        if text in ("-F", "-v"):
            index += 2
        elif text.startswith(("-F", "-v", "--field-separator=", "--assign=")):
            index += 1
        else:
            return f"awk option {text} is not allowed"
    if index >= len(texts):
        return "awk without an inline program"
    match = _AWK_FORBIDDEN.search(texts[index])
    if match:
        return f"awk program contains {match.group()!r}, which can run commands or write files"
    for text in texts[index + 1:]:
        if text.startswith("-") and text != "-":
            return f"awk operand {text} could be read as an option"
    return None


check_sort = deny_options(
    "sort",
    short={"o": "writes its output to a file"},
    long={"output": "writes its output to a file",
          "compress-program": "runs a program on temporary files"},
    short_values="kotST",
)

check_rg = deny_options(
    "rg",
    short={"z": "runs decompression programs"},
    long={"pre": "runs a preprocessor program on every file",
          "search-zip": "runs decompression programs",
          "hostname-bin": "runs a program"},
    short_values="ABCEMTdefgjmrt",
)

check_tree = deny_options(
    "tree",
    short={"o": "writes its output to a file", "R": "writes 00Tree.html files"},
    long={"output": "writes its output to a file"},
    short_values="LPIH",
)

check_yq = deny_options(
    "yq",
    short={"i": "edits files in place", "s": "writes split files"},
    long={"inplace": "edits files in place", "in-place": "edits files in place",
          "split-exp": "writes split files"},
    short_values="opI",
)

check_date = deny_options(
    "date",
    short={"s": "sets the system clock"},
    long={"set": "sets the system clock"},
    short_values="dfrI",
)

check_file = deny_options(
    "file",
    short={"C": "compiles a magic file (writes it)"},
    long={"compile": "compiles a magic file (writes it)"},
    short_values="mefFP",
)

_UNIQ_FLAGS = frozenset("cdDiuz0123456789")  # digits: the obsolete -N (skip N fields)
_UNIQ_LONG_FLAGS = frozenset({"count", "repeated", "ignore-case", "unique", "zero-terminated",
                              "all-repeated", "group", "help", "version"})
_UNIQ_LONG_VALUES = frozenset({"skip-fields", "skip-chars", "check-chars"})


def check_uniq(args: Sequence[Word]) -> str | None:
    """uniq with at most one file operand: ``uniq [OPTION]... [INPUT [OUTPUT]]`` writes OUTPUT."""
    if problem := dynamic_argument("uniq", args):
        return problem
    texts = [w.text for w in args]
    operands: list[str] = []
    index = 0
    while index < len(texts):
        text = texts[index]
        index += 1
        if text == "--":
            operands += texts[index:]
            break
        if text == "-" or not text.startswith("-"):
            operands.append(text)
            continue
        skip = _uniq_option(text)
        if isinstance(skip, str):
            return skip
        index += skip
    if len(operands) > 1:
        return f"uniq writes to its second file operand {operands[1]}"
    return None


def _uniq_option(text: str) -> int | str:
    """How many following arguments the option ``text`` takes, or why it is refused."""
    if text.startswith("--"):
        name, has_value, _ = text[2:].partition("=")
        if name in _UNIQ_LONG_VALUES:
            return 0 if has_value else 1
        return 0 if name in _UNIQ_LONG_FLAGS else f"uniq option {text} is not allowed"
    for position, letter in enumerate(text[1:], start=2):
        if letter in "fsw":
            return 0 if text[position:] else 1
        if letter not in _UNIQ_FLAGS:
            return f"uniq option -{letter} is not allowed"
    return 0


_XXD_FLAGS = frozenset({"-a", "-b", "-C", "-E", "-e", "-h", "-i", "-p", "-u", "-v", "-d"})
_XXD_VALUES = {"-c": "-cols", "-g": "-groupsize", "-l": "-len", "-o": "-offset", "-s": "-seek",
               "-n": "-name", "-R": "-R"}


def check_xxd(args: Sequence[Word]) -> str | None:
    """xxd without ``-r`` and with at most one file operand (``xxd IN OUT`` writes OUT).

    xxd names an option by its first two characters (``-ps`` is ``-p``, ``-revert`` is ``-r``).
    """
    if problem := dynamic_argument("xxd", args):
        return problem
    texts = [w.text for w in args]
    operands: list[str] = []
    index = 0
    while index < len(texts):
        text, head = texts[index], texts[index][:2]
        index += 1
        if text == "--":
            operands += texts[index:]
            break
        if text == "-" or not text.startswith("-"):
            operands.append(text)
        elif head == "-r":
            return f"xxd {text} reverts a dump into binary"
        elif head in _XXD_VALUES:
            # a value is attached (-c8) unless the argument spells the option's name (-cols)
            index += 1 if len(text) == 2 or _XXD_VALUES[head].startswith(text) else 0
        elif head not in _XXD_FLAGS:
            return f"xxd option {text} is not allowed"
    if len(operands) > 1:
        return f"xxd writes to its second file operand {operands[1]}"
    return None


def check_printf(args: Sequence[Word]) -> str | None:
    """printf without ``-v`` (bash's builtin assigns a variable with it; options come first)."""
    if not args:
        return None
    first = args[0]
    if first.dynamic:
        return f"printf format {first.raw} is only known at run time (it could be -v)"
    if first.text.startswith("-") and first.text not in ("-", "--"):
        return f"printf {first.text} assigns a shell variable" if first.text.startswith("-v") else (
            f"printf option {first.text} is not allowed")
    return None


def check_test(args: Sequence[Word]) -> str | None:
    """test / [ without ``-v``/``-R``: bash evaluates the array subscript they name."""
    if problem := dynamic_argument("test", args):
        return problem
    for word in args:
        if word.text in ("-v", "-R"):
            return f"test {word.text} evaluates an array subscript, which can run commands"
    return None


_HOSTNAME_FLAGS = frozenset({
    "-s", "--short", "-f", "--fqdn", "--long", "-d", "--domain", "-i", "--ip-address", "-I",
    "--all-ip-addresses", "-A", "--all-fqdns", "-a", "--alias", "-y", "--yp", "--nis", "-V",
    "--version", "-h", "--help",
})


def check_hostname(args: Sequence[Word]) -> str | None:
    """hostname that only prints: display flags, no name (a name sets the host name)."""
    if problem := dynamic_argument("hostname", args):
        return problem
    for word in args:
        if word.text not in _HOSTNAME_FLAGS:
            return f"hostname {word.text} may set the host name"
    return None
