"""Which variable assignments leave a read-only command read-only.

An allowlist, not a denylist: the variables that make a harmless program run other code are
many and keep growing (``LD_PRELOAD``, ``BASH_ENV``, ``PATH``, ``GIT_SSH_COMMAND``,
``GIT_EXTERNAL_DIFF``, ``PAGER``, ``LESSOPEN``, ``GCONV_PATH``, ``RIPGREP_CONFIG_PATH``, ``HOME``
and ``XDG_CONFIG_HOME`` (they pick the git config file), ``PS4``, ``IFS``...), so only names known
to change formatting alone are accepted, plus a few git and pager variables pinned to harmless
values (``GIT_PAGER=cat`` is common in agent commands).

A bare assignment (no command after it) only sets a shell variable. Bash's own special
variables are all upper case, so a lower-case name can only change later expansions, which the
analyzer treats as unknown values anyway; those are accepted too.
"""

from __future__ import annotations

from apps.engine.tools.bash_readonly.tokenizer import Word

__all__ = ["assignment_problem"]

SAFE_NAMES = frozenset({
    "LANG", "LANGUAGE", "LC_ALL", "TZ", "TERM", "COLUMNS", "LINES", "NO_COLOR", "CLICOLOR",
    "CLICOLOR_FORCE", "FORCE_COLOR", "GREP_COLOR", "GREP_COLORS", "LS_COLORS", "POSIXLY_CORRECT",
    "TIME_STYLE", "QUOTING_STYLE", "BLOCK_SIZE",
})
SAFE_PREFIXES = ("LC_",)
SAFE_VALUES: dict[str, frozenset[str]] = {
    "GIT_PAGER": frozenset({"cat", ""}),
    "PAGER": frozenset({"cat", ""}),
    "GIT_TERMINAL_PROMPT": frozenset({"0"}),
    "GIT_OPTIONAL_LOCKS": frozenset({"0"}),
}


def assignment_problem(word: Word, *, exported: bool) -> str | None:
    """Why the assignment ``word`` (``NAME=value``) may make commands unsafe, or None.

    ``exported`` is true for a prefix (``NAME=value cmd``) or an ``env`` argument, which the
    program sees in its environment; false for a bare assignment.
    """
    name, _, value = word.text.partition("=")
    name = name.removesuffix("+")
    if name in SAFE_VALUES:
        if word.dynamic or value not in SAFE_VALUES[name]:
            return f"environment variable {name}={value} may make the command run other programs"
        return None
    if name in SAFE_NAMES or name.startswith(SAFE_PREFIXES):
        return None
    if not exported and name.islower():
        return None
    return f"environment variable {name} is not known to be safe (it may change what runs)"
