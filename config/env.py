"""Typed readers for settings from the environment: the one place configuration enters.

Each reader fails loudly on a bad value (a typo in production must not silently fall back to a
default). ``NAME_FILE`` variants read secrets from a file (Docker/Kubernetes secrets).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["env_bool", "env_float", "env_int", "env_list", "env_origin", "env_path", "env_str",
           "EnvError"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class EnvError(RuntimeError):
    """A setting in the environment has a value that cannot be used."""


def _raw(name: str) -> str | None:
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as exc:
            raise EnvError(f"{name}_FILE={file_name!r} cannot be read: {exc}") from exc
    return os.environ.get(name)


def env_str(name: str, default: str = "") -> str:
    """A string (``NAME`` or the contents of ``NAME_FILE``)."""
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, default: bool = False) -> bool:
    """1/true/yes/on or 0/false/no/off (any case)."""
    value = _raw(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise EnvError(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """A whole number, at least ``minimum`` when one is given."""
    value = _raw(name)
    if value is None or not value.strip():
        return default
    try:
        number = int(value)
    except ValueError:
        raise EnvError(f"{name}={value!r} is not a whole number") from None
    if minimum is not None and number < minimum:
        raise EnvError(f"{name}={value!r} is under its minimum, {minimum}")
    return number


def env_float(name: str, default: float) -> float:
    """A number."""
    value = _raw(name)
    if value is None or not value.strip():
        return default
    try:
        return float(value)
    except ValueError:
        raise EnvError(f"{name}={value!r} is not a number") from None


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    """Comma-separated values, blanks dropped."""
    value = _raw(name)
    if value is None:
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


def env_path(name: str, default: Path) -> Path:
    """A filesystem path (``~`` expanded, made absolute)."""
    value = _raw(name)
    return (Path(value).expanduser() if value else default).resolve()


def env_origin(name: str) -> str:
    """An origin, ``http(s)://host[:port]`` (a trailing ``/`` dropped); ``""`` when unset. A
    path, query, fragment or user part is refused: the value is where URLs are built on."""
    value = (_raw(name) or "").strip().removesuffix("/")
    if not value:
        return ""
    parts = urlsplit(value)
    if (parts.scheme not in ("http", "https") or not parts.hostname or parts.path
            or parts.query or parts.fragment or "@" in parts.netloc):
        raise EnvError(f"{name}={value!r} is not an origin (e.g. https://confab.example.com)")
    return value
