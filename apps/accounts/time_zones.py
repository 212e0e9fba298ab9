"""The time zones a person may choose for the dates confab shows them: the IANA names Python's
``zoneinfo`` knows (the system's tz database, else the ``tzdata`` package), e.g. "Asia/Shanghai".

A blank choice means the site's ``settings.TIME_ZONE``. The names stay as the tz database spells
them: they are identifiers, the same in every language.
"""

from __future__ import annotations

import zoneinfo
from functools import cache

__all__ = ["time_zone_choices", "time_zone_known"]


@cache
def _names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def time_zone_known(name: str) -> bool:
    """Whether ``name`` is an IANA time zone of this system (case-sensitive, as zoneinfo)."""
    return name in _names()


def time_zone_choices() -> list[tuple[str, str]]:
    """``(name, name)`` for every known zone, sorted: the choices of a form field."""
    return [(name, name) for name in sorted(_names())]
