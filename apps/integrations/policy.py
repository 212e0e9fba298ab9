"""A team's tool policy: which tool calls wait for a member's approval (DESIGN 2.5).

Stored on ``Team.tool_policy`` as ``{"require": [names], "exempt": [names]}``. Each tool has
its own default (``Tool.needs_approval(arguments)``: writes, shell commands the read-only
analyzer cannot clear, destructive MCP tools); the policy adjusts it per tool name:

- a name in ``require`` always waits for approval, even when its default says no (``Bash``
  there makes read-only commands wait too);
- a name in ``exempt`` never waits, even when its default says yes (``Bash`` there lets every
  command run unasked: the team chose it);
- any other tool follows its default.

A name in both lists is refused when the policy is set; should one be stored anyway,
``require`` wins (the safe reading). Names are exact and case-sensitive, as the model calls
them; names no tool has yet are accepted, since MCP tools come and go with their servers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from django.utils.translation import gettext as _

from apps.common.errors import ApplicationError, ErrorCode

__all__ = ["MAX_NAMES", "clean_tool_policy", "needs_approval"]

# The tool-name rule of the providers' function calling (Anthropic: ^[a-zA-Z0-9_-]{1,128}$;
# OpenAI allows 64): a name outside it could never be called, so it cannot be meant.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
MAX_NAMES = 500


def needs_approval(policy: Mapping[str, Any] | None, tool_name: str, default: bool) -> bool:
    """Whether a call of ``tool_name`` waits for approval under ``policy``, given the tool's
    own ``default`` for this call. A malformed policy counts as empty (defaults apply)."""
    if tool_name in _names(policy, "require"):
        return True
    if tool_name in _names(policy, "exempt"):
        return False
    return default


def _names(policy: Mapping[str, Any] | None, key: str) -> list[Any]:
    value = policy.get(key) if isinstance(policy, Mapping) else None
    return value if isinstance(value, list) else []


def clean_tool_policy(*, require: Iterable[Any], exempt: Iterable[Any]) -> dict[str, list[str]]:
    """The policy to store: ``{"require": [...], "exempt": [...]}``, names stripped and
    deduplicated in their order. ``invalid`` for a name that is not a string of 1-128
    letters, digits, ``_`` or ``-``, for more than 500 names, or for a name in both lists."""
    cleaned = {"require": _clean_names(require, "require"),
               "exempt": _clean_names(exempt, "exempt")}
    both = sorted(set(cleaned["require"]) & set(cleaned["exempt"]))
    if both:
        raise ApplicationError(ErrorCode.INVALID,
                               _("A tool cannot be both required and exempt: %(names)s.")
                               % {"names": ", ".join(both)})
    return cleaned


def _clean_names(values: Iterable[Any], label: str) -> list[str]:
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ApplicationError(ErrorCode.INVALID, _("%(label)r is a list of tool names.")
                               % {"label": label})
    names: list[str] = []
    for value in values:
        name = value.strip() if isinstance(value, str) else None
        if name is None or not _NAME.fullmatch(name):
            raise ApplicationError(ErrorCode.INVALID, _(
                "%(value)r in %(label)r is not a tool name (1-128 letters, digits, '_' or '-').")
                % {"value": value, "label": label})
        if name not in names:
            names.append(name)
    if len(names) > MAX_NAMES:
        raise ApplicationError(ErrorCode.INVALID, _("%(label)r lists more than %(most)d tools.")
                               % {"label": label, "most": MAX_NAMES})
    return names
