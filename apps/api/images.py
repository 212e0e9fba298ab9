"""Images attached to messages (issue 18): ``POST /api/conversations/{id}/images`` uploads one
(multipart, field ``file``; members), ``GET /api/conversations/{id}/images/{image_id}`` serves
it to the team's members. Another team's conversation or image answers ``404`` like a missing
one. The type is read from the bytes (:mod:`apps.rooms.images`): ``415`` for anything but PNG,
JPEG, GIF or WebP, ``413`` over ``CONFAB_IMAGE_MAX_BYTES``, ``400`` for a damaged image.
"""

from __future__ import annotations

from django.http import FileResponse, HttpRequest
from ninja import File, Router, Status
from ninja.files import UploadedFile

from apps.api.schemas import READ_ERRORS, WRITE_ERRORS, ErrorOut, ImageOut
from apps.common.errors import not_found
from apps.common.storable import StorableText
from apps.rooms.images import image_for, image_path, image_upload, image_url
from apps.rooms.models import ConversationImage
from apps.rooms.selectors import conversation_for

router = Router(tags=["images"])

_IMAGE_RESPONSE = {"responses": {200: {
    "description": "The image's bytes, with the type they turned out to be.",
    "content": {t: {"schema": {"type": "string", "format": "binary"}}
                for t in ("image/png", "image/jpeg", "image/gif", "image/webp")},
}}}


def image_json(image: ConversationImage) -> dict[str, object]:
    """What the upload answers: ``{"id", "url", "media_type", "width", "height"}``."""
    return {"id": image.pk, "url": image_url(image.conversation_id, image.pk),
            "media_type": image.media_type, "width": image.width, "height": image.height}


@router.post("/conversations/{conversation_id}/images",
             response={201: ImageOut, WRITE_ERRORS | {413, 415}: ErrorOut},
             url_name="upload_image")
def upload_image(request: HttpRequest, conversation_id: int,
                 file: File[UploadedFile]) -> Status[dict[str, object]]:
    """Upload an image to attach to a message (``send.attachments``, docs/protocol.md)."""
    conversation, membership = conversation_for(request.auth, conversation_id)
    image = image_upload(conversation=conversation, membership=membership, upload=file)
    return Status(201, image_json(image))


@router.get("/conversations/{conversation_id}/images/{image_id}",
            response={200: None, READ_ERRORS: ErrorOut}, openapi_extra=_IMAGE_RESPONSE,
            url_name="get_conversation_image")
def get_conversation_image(request: HttpRequest, conversation_id: int,
                           image_id: StorableText) -> FileResponse:
    """An image of the conversation, as the type it was sniffed as; never sniffed again by the
    browser (``nosniff``) and never a document (a sandboxing CSP)."""
    image = image_for(user=request.auth, conversation_id=conversation_id, image_id=image_id)
    try:
        stream = image_path(image.conversation.room.team_id, image.pk).open("rb")
    except FileNotFoundError:  # its file was removed by hand: as gone as a missing image
        raise not_found("image") from None
    response = FileResponse(stream, content_type=image.media_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Content-Disposition"] = "inline"
    response["Cache-Control"] = "private, max-age=31536000, immutable"  # an id never changes
    return response
