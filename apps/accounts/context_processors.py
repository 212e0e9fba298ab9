"""Template context for every page: the top bar's teams."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from apps.accounts.current import current_membership
from apps.accounts.selectors import teams_of


def teams(request: HttpRequest) -> dict[str, Any]:
    """``current_membership`` (None when signed out or in no team) and ``my_teams`` (the
    switcher's list, evaluated only when a template uses it)."""
    if not request.user.is_authenticated:
        return {"current_membership": None, "my_teams": ()}
    return {"current_membership": current_membership(request), "my_teams": teams_of(request.user)}
