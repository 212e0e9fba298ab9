"""Decide whether a bash command line only reads, so the agent may run it without approval.

Used by the Bash tool's ``input_dependent`` concurrency and approval rules (DESIGN 2.5): a
read-only command may run beside other read-only tools and without a person's decision.
Conservative throughout: an unknown command, an option that is not understood, or syntax the
tokenizer cannot follow exactly all mean "not read-only", with a reason naming the culprit::

    >>> analyze("grep -rn TODO src | head").read_only
    True
    >>> analyze("sed -i s/a/b/ f.txt").reason
    'sed -i edits files in place'

Modules: ``tokenizer`` (bash words, quotes, substitutions, redirections), ``parser`` (lists,
pipelines, subshells), ``analyzer`` (the walk), ``allowlist`` (the commands), and the flag rules
in ``commands``, ``sed``, ``git``, ``wrappers`` and ``environment``.
"""

from apps.engine.tools.bash_readonly.analyzer import Analysis, analyze, is_read_only

__all__ = ["Analysis", "analyze", "is_read_only"]
