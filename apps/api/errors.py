"""One error shape for the REST API: ``{"code", "message"}`` with the code's HTTP status
(plus the fields a subclass adds: a wiki conflict's ``current`` and ``merged_text``).

Services raise :class:`~apps.common.errors.ApplicationError`; django-ninja's own refusals
(no credentials, a body that does not validate, an unknown route parameter) and a request body
over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (``too_large``, 413) are mapped onto the same closed list
of codes. Anything else a view raises is a bug: it is logged as Django logs a 500 (the
``django.request`` logger, with its traceback) and answered ``500 {"code": "internal",
"message"}``, never with an HTML page.
"""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.log import log_response
from django.utils.translation import gettext as _
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from apps.common.errors import ApplicationError, ErrorCode, not_found
from apps.common.validation_errors import error_sentence

__all__ = ["install_error_handlers"]

_CODE_OF_STATUS = {
    401: ErrorCode.NOT_AUTHENTICATED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    409: ErrorCode.CONFLICT,
    413: ErrorCode.TOO_LARGE,
    429: ErrorCode.RATE_LIMITED,
    503: ErrorCode.UNAVAILABLE,
}
_MAX_DETAILS = 5
_INTERNAL = "internal"
"""The code of a REST 500: a bug, not a refusal (not an ErrorCode: a service never raises it,
and a socket closes with 4011 instead: apps.realtime.sockets)."""


def install_error_handlers(api: NinjaAPI) -> None:
    """Make every refusal of ``api`` answer ``{"code", "message"}``."""

    def respond(request: HttpRequest, error: ApplicationError) -> HttpResponse:
        response = api.create_response(request, error.body(), status=error.status)
        if error.code == ErrorCode.NOT_AUTHENTICATED:
            response["WWW-Authenticate"] = 'Bearer realm="confab"'
        return response

    @api.exception_handler(ApplicationError)
    def application_error(request: HttpRequest, exc: ApplicationError) -> HttpResponse:
        return respond(request, exc)

    @api.exception_handler(AuthenticationError)
    def not_authenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        return respond(request, ApplicationError(
            ErrorCode.NOT_AUTHENTICATED,
            _("Sign in, or send a personal API token as 'Authorization: Bearer <token>'.")))

    @api.exception_handler(ValidationError)
    def invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        return respond(request, ApplicationError(ErrorCode.INVALID, validation_message(exc)))

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        code = _CODE_OF_STATUS.get(exc.status_code, ErrorCode.INVALID)
        return respond(request, ApplicationError(code, _http_error_message(exc)))

    @api.exception_handler(RequestDataTooBig)
    def too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
        return respond(request, ApplicationError(ErrorCode.TOO_LARGE,
                                                 _("The request body is too large.")))

    @api.exception_handler(Http404)
    def missing(request: HttpRequest, exc: Http404) -> HttpResponse:
        return respond(request, not_found())

    @api.exception_handler(Exception)
    def internal(request: HttpRequest, exc: Exception) -> HttpResponse:
        response = api.create_response(request, {"code": _INTERNAL, "message": _(
            "Something went wrong on the server. It has been logged; try again later.")},
            status=500)
        log_response("Internal Server Error: %s", request.path, response=response,
                     request=request, exception=exc)
        return response


def validation_message(exc: ValidationError) -> str:
    """The first few validation errors as ``where: what`` lines joined by ``; ``, ``what`` in
    the active language (:func:`~apps.common.validation_errors.error_sentence`); ``where``
    names the field as the API spells it (``query.q``)."""
    lines = []
    for error in exc.errors[:_MAX_DETAILS]:
        where = ".".join(str(part) for part in error.get("loc", ()))
        lines.append(f"{where}: {error_sentence(error)}")
    return "; ".join(lines) or _("Invalid request.")


def _http_error_message(exc: HttpError) -> str:
    """``exc``'s message; django-ninja's English refusal of a body that is not JSON
    (``ninja.params.models.BodyModel``, "Cannot parse request body") in the active language."""
    if str(exc).startswith("Cannot parse request body"):
        return _("Cannot parse request body")
    return str(exc)
