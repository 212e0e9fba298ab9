"""Pydantic's validation errors as sentences in the active language.

Pydantic writes its messages in English only (``error["msg"]``); each error also carries a
stable ``type`` and its ``ctx`` (pydantic docs, "Validation Errors":
https://docs.pydantic.dev/latest/errors/validation_errors/). The common types are rendered
here from gettext templates whose English text is pydantic's own, so English clients see what
they saw before; a type not listed falls back to pydantic's English in English and to a
generic translated sentence otherwise. Error codes (``invalid``, ``bad_frame``) never change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.utils.translation import get_language, gettext, ngettext

__all__ = ["error_sentence"]

Ctx = Mapping[str, Any]

_SENTENCES: dict[str, Callable[[Ctx], str]] = {
    "missing": lambda ctx: gettext("Field required"),
    "extra_forbidden": lambda ctx: gettext("Extra inputs are not permitted"),
    "string_type": lambda ctx: gettext("Input should be a valid string"),
    "int_type": lambda ctx: gettext("Input should be a valid integer"),
    "int_parsing": lambda ctx: gettext(
        "Input should be a valid integer, unable to parse string as an integer"),
    "bool_type": lambda ctx: gettext("Input should be a valid boolean"),
    "dict_type": lambda ctx: gettext("Input should be a valid dictionary"),
    "json_invalid": lambda ctx: gettext("Invalid JSON: %(error)s") % ctx,
    "literal_error": lambda ctx: gettext("Input should be %(expected)s") % ctx,
    "string_pattern_mismatch": lambda ctx: gettext(
        "String should match pattern '%(pattern)s'") % ctx,
    "less_than_equal": lambda ctx: gettext("Input should be less than or equal to %(le)s") % ctx,
    "greater_than_equal": lambda ctx: gettext(
        "Input should be greater than or equal to %(ge)s") % ctx,
    "string_too_short": lambda ctx: ngettext(
        "String should have at least %(min_length)d character",
        "String should have at least %(min_length)d characters", ctx["min_length"]) % ctx,
    "string_too_long": lambda ctx: ngettext(
        "String should have at most %(max_length)d character",
        "String should have at most %(max_length)d characters", ctx["max_length"]) % ctx,
    "union_tag_invalid": lambda ctx: gettext(
        "Input tag '%(tag)s' found using %(discriminator)s does not match any of the expected "
        "tags: %(expected_tags)s") % ctx,
    "union_tag_not_found": lambda ctx: gettext(
        "Unable to extract tag using discriminator %(discriminator)s") % ctx,
    # our own validators raise ValueError with a message already in the active language
    "value_error": lambda ctx: gettext("Value error, %(error)s") % ctx,
}


def error_sentence(error: Mapping[str, Any]) -> str:
    """The sentence for one entry of pydantic's ``ValidationError.errors()`` (a dict with
    ``type``, ``msg`` and, for most types, ``ctx``), in the active language. Never raises:
    a ``ctx`` missing a key the template needs gives the fallback."""
    render = _SENTENCES.get(str(error.get("type", "")))
    if render is not None:
        try:
            return render(error.get("ctx") or {})
        except (KeyError, TypeError, ValueError):
            pass  # a pydantic release changed the ctx: say something true rather than fail
    if (get_language() or "en").startswith("en"):
        return str(error.get("msg") or gettext("This value is not valid."))
    return gettext("This value is not valid.")
