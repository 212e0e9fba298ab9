"""How server-rendered pages answer a service's refusal (the HTML side of ApplicationError)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from apps.common.errors import ApplicationError, ErrorCode

__all__ = ["refusal"]


def refusal(request: HttpRequest, error: ApplicationError) -> None:
    """Raise ``Http404`` for ``not_found`` (also "not yours") and ``PermissionDenied`` (403) for
    ``forbidden``; any other refusal becomes an error message for the next page shown."""
    if error.code is ErrorCode.NOT_FOUND:
        raise Http404(error.message) from error
    if error.code is ErrorCode.FORBIDDEN:
        raise PermissionDenied(error.message) from error
    messages.error(request, error.message)
