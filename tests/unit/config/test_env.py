"""``config.env``: the public origin setting (CONFAB_PUBLIC_URL) is an origin or refused at
start-up, never a URL that would build broken redirect URIs; a whole number under its minimum
is refused at start-up too."""

from __future__ import annotations

import pytest

from config.env import EnvError, env_int, env_origin


@pytest.mark.parametrize(("value", "origin"), [
    (None, ""), ("", ""), ("https://confab.example.com/", "https://confab.example.com"),
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
])
def test_an_origin_is_read_without_its_trailing_slash(
        value: str | None, origin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONFAB_PUBLIC_URL", raising=False)
    if value is not None:
        monkeypatch.setenv("CONFAB_PUBLIC_URL", value)
    assert env_origin("CONFAB_PUBLIC_URL") == origin


@pytest.mark.parametrize("value", [
    "confab.example.com", "ftp://confab.example.com", "https://confab.example.com/app",
    "https://confab.example.com?x=1", "https://user@confab.example.com", "https://",
])
def test_anything_else_is_refused(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFAB_PUBLIC_URL", value)
    with pytest.raises(EnvError, match="CONFAB_PUBLIC_URL=.* is not an origin"):
        env_origin("CONFAB_PUBLIC_URL")


def test_a_whole_number_under_its_minimum_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFAB_NOTES_MIN_TOKENS", "1")
    assert env_int("CONFAB_NOTES_MIN_TOKENS", 8_000, minimum=1) == 1
    monkeypatch.setenv("CONFAB_NOTES_MIN_TOKENS", "0")
    with pytest.raises(EnvError, match="CONFAB_NOTES_MIN_TOKENS='0' is under its minimum, 1"):
        env_int("CONFAB_NOTES_MIN_TOKENS", 8_000, minimum=1)
    assert env_int("CONFAB_NOTES_MIN_TOKENS", 8_000) == 0  # no minimum: any whole number
