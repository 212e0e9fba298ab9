"""Find forbidden options in an argument list the way GNU getopt would read them.

GNU getopt permutes, so an option counts wherever it appears before ``--`` (``sort f -o out``
writes), short options cluster (``-no`` holds ``-o``), and a long option may be abbreviated to
any unambiguous prefix (``--out=f`` is ``--output=f``): a long option is refused when its name is
a prefix of a forbidden one. A short option that takes a value ends the cluster, so the value
(``date -Iseconds``) is not read as more options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from apps.engine.tools.bash_readonly.tokenizer import Word

__all__ = ["Check", "denied_option", "deny_options", "dynamic_argument", "option_texts"]

Check = Callable[[Sequence[Word]], str | None]
"""Why a command with these arguments (after its name) may not be read-only, or None."""


def dynamic_argument(command: str, args: Sequence[Word]) -> str | None:
    """The reason to refuse when an argument's value is only known at run time, else None.

    A variable, glob or substitution could expand to a forbidden flag (a file named ``-i`` in
    ``sed s/a/b/ *``), so commands with forbidden flags need every argument spelled out.
    """
    for word in args:
        if word.dynamic:
            return (f"{command} argument {word.raw} is only known at run time, "
                    "so it cannot be checked")
    return None


def option_texts(texts: Iterable[str]) -> Iterable[str]:
    """The arguments that GNU getopt reads as options: those starting with ``-``, before ``--``."""
    for text in texts:
        if text == "--":
            return
        if text.startswith("-") and text != "-":
            yield text


def denied_option(
    command: str,
    texts: Iterable[str],
    *,
    short: Mapping[str, str] | None = None,
    long: Mapping[str, str] | None = None,
    short_values: str = "",
) -> str | None:
    """The reason the first forbidden option in ``texts`` is refused, or None.

    ``short`` maps option letters and ``long`` maps long names to why they are refused;
    ``short_values`` are the letters that take a value (the rest of the cluster is the value).
    """
    short, long = short or {}, long or {}
    for text in option_texts(texts):
        if text.startswith("--"):
            name = text[2:].partition("=")[0]
            for denied, why in long.items():
                if denied.startswith(name):
                    return f"{command} --{denied} {why}"
            continue
        for letter in text[1:]:
            if letter in short:
                return f"{command} -{letter} {short[letter]}"
            if letter in short_values:
                break
    return None


def deny_options(
    command: str,
    *,
    short: Mapping[str, str] | None = None,
    long: Mapping[str, str] | None = None,
    short_values: str = "",
) -> Check:
    """A check refusing dynamic arguments and the given options (see :func:`denied_option`)."""

    def check(args: Sequence[Word]) -> str | None:
        return dynamic_argument(command, args) or denied_option(
            command, (w.text for w in args), short=short, long=long, short_values=short_values
        )

    return check
