"""Images people attach to messages (issue 18): upload, storage, attachment and loading.

An upload is read in full, sniffed and decoded by :func:`apps.engine.images.sniff` (the client's
content type is never trusted), and kept at ``settings.IMAGES_DIR/<team id>/<image id>`` —
outside every workspace, so no agent tool can reach it — with a :class:`ConversationImage` row.
A refused upload stores nothing. A message carries its images as ``image`` blocks by id
(``{"type": "image", "media_type", "id"}``, :class:`apps.engine.messages.ImageBlock`); clients
see them with a ``url`` (:func:`shown_content`), never inline, and the run loads the bytes back
(:func:`with_image_data`) before its history goes to the model.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.urls import reverse
from django.utils.translation import gettext

from apps.accounts.models import Membership, User
from apps.common.errors import ApplicationError, ErrorCode, not_found
from apps.engine.images import ImageRejected, sniff
from apps.engine.messages import ImageBlock, Message, TextBlock
from apps.integrations.builders import model_reads_images
from apps.rooms.models import Conversation, ConversationImage
from apps.rooms.selectors import conversation_for
from apps.rooms.services.access import require_writer
from apps.rooms.services.configure import run_model

__all__ = ["image_for", "image_path", "image_upload", "image_url", "images_attached",
           "images_delete", "images_fork", "shown_content", "stored_images", "with_image_data"]

logger = logging.getLogger(__name__)

_ID = re.compile(r"[0-9a-f]{32}")
IMAGE_LEFT_OUT = "[an image was attached here; this model does not read images]"


class Upload(Protocol):
    """What an upload gives (Django's ``UploadedFile``): its ``size`` in bytes and ``read``."""

    size: int | None

    def read(self, size: int = -1) -> bytes: ...


def image_path(team_id: int, image_id: str) -> Path:
    """Where the bytes of image ``image_id`` of team ``team_id`` are kept."""
    return Path(settings.IMAGES_DIR) / str(team_id) / image_id


def image_upload(*, conversation: Conversation, membership: Membership,
                 upload: Upload) -> ConversationImage:
    """Keep ``upload`` as an image of ``conversation``. Raises ApplicationError: ``forbidden``
    (a viewer), ``too_large`` (over ``CONFAB["IMAGE_MAX_BYTES"]``), ``unsupported_type`` (not
    PNG, JPEG, GIF or WebP, whatever the client said), ``invalid`` (a damaged image, or more
    pixels than :data:`apps.engine.images.MAX_PIXELS`). Nothing is stored when it raises."""
    require_writer(membership)
    limit = settings.CONFAB["IMAGE_MAX_BYTES"]
    too_large = ApplicationError(ErrorCode.TOO_LARGE,
                                 gettext("An image is at most %(mib)g MiB.")
                                 % {"mib": limit / (1024 * 1024)})
    if (upload.size or 0) > limit:
        raise too_large
    data = upload.read(limit + 1)
    if len(data) > limit:
        raise too_large
    try:
        info = sniff(data)
    except ImageRejected as exc:
        code = ErrorCode.UNSUPPORTED_TYPE if exc.unsupported else ErrorCode.INVALID
        raise ApplicationError(code, str(exc)) from exc
    image = ConversationImage(conversation=conversation, uploaded_by=membership.user,
                              media_type=info.media_type, width=info.width,
                              height=info.height, size=len(data))
    path = image_path(conversation.room.team_id, image.id)
    _write(path, data)
    try:
        image.save(force_insert=True)
    except BaseException:
        path.unlink(missing_ok=True)  # the row is what makes the file an image: no row, no file
        raise
    return image


def _write(path: Path, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all (a temporary file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def image_for(*, user: User, conversation_id: int, image_id: str) -> ConversationImage:
    """The image ``image_id`` of the conversation, for a member of its team (any role);
    ``not_found`` for a missing one and for another team's, alike."""
    conversation, _ = conversation_for(user, conversation_id)
    image = (ConversationImage.objects.filter(pk=image_id, conversation=conversation).first()
             if _ID.fullmatch(image_id) else None)
    if image is None:
        raise not_found("image")
    return image


def images_attached(*, conversation: Conversation, ids: list[str]) -> list[dict[str, Any]]:
    """The ``image`` content blocks of the images ``ids`` (in that order) for a message of
    ``conversation``; an id given twice counts once. Raises ApplicationError ``invalid`` for
    more than ``CONFAB["IMAGES_PER_MESSAGE"]``, an id that is not one of this conversation's images
    (another conversation's or team's answers the same as a missing one), or when the model
    the conversation's next run uses does not read images (a notice instead of the provider's
    error later)."""
    if not ids:
        return []
    ids = list(dict.fromkeys(ids))  # the same image pasted twice is one image
    most = settings.CONFAB["IMAGES_PER_MESSAGE"]
    if len(ids) > most:
        raise ApplicationError(
            ErrorCode.INVALID, gettext("A message carries at most %(most)d images.")
                               % {"most": most})
    model = run_model(conversation)[0]  # the conversation's chosen model, else the team's
    if model is not None and not model_reads_images(model):
        raise ApplicationError(ErrorCode.INVALID, gettext(
            "The model %(model)s does not read images. Send the message without them, or ask "
            "an admin of the team for a model that reads images.") % {"model": model})
    found = {image.pk: image for image in ConversationImage.objects.filter(
        conversation=conversation, pk__in=[i for i in ids if _ID.fullmatch(i)])}
    if missing := [i for i in ids if i not in found]:
        raise ApplicationError(ErrorCode.INVALID,
                               gettext(
            "No image %(id)r was uploaded to this conversation.") % {"id": missing[0]})
    return [ImageBlock(media_type=found[i].media_type, id=i).model_dump(mode="json",
                                                                         exclude_none=True)
            for i in ids]


def images_delete(team_id: int, image_ids: list[str]) -> None:
    """Remove the files of ``image_ids`` (their rows are gone: the conversation was deleted)."""
    for image_id in image_ids:
        if _ID.fullmatch(image_id):
            image_path(team_id, image_id).unlink(missing_ok=True)


def images_fork(source: Conversation, fork: Conversation,
                contents: list[list[Any]]) -> list[list[Any]]:
    """``contents`` (message contents copied from ``source`` into ``fork``) with each stored
    image now one of ``fork``'s: a row of its own and a hard link to the same bytes (a copy
    where links fail), so the fork shows them and keeps them when ``source`` is deleted."""
    ids = {block["id"] for content in contents for block in content if _stored_image(block)}
    team_id = source.room.team_id
    renamed: dict[str, str] = {}
    for image in ConversationImage.objects.filter(conversation=source, pk__in=ids):
        copy = ConversationImage.objects.create(
            conversation=fork, uploaded_by_id=image.uploaded_by_id, media_type=image.media_type,
            width=image.width, height=image.height, size=image.size)
        _link(image_path(team_id, image.pk), image_path(team_id, copy.pk))
        renamed[image.pk] = copy.pk
    return [[{**block, "id": renamed.get(block["id"], block["id"])} if _stored_image(block)
             else block for block in content] for content in contents]


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # e.g. a file system without hard links
        shutil.copyfile(source, target)


def shown_content(conversation_id: int, content: list[Any]) -> list[Any]:
    """``content`` as clients see it: each stored image block also carries its ``url``."""
    if not any(_stored_image(block) for block in content):
        return content
    return [{**block, "url": image_url(conversation_id, block["id"])}
            if _stored_image(block) else block for block in content]


def image_url(conversation_id: int, image_id: str) -> str:
    """Where members fetch an image (the REST API's ``get_conversation_image``)."""
    return reverse("api:get_conversation_image", kwargs={"conversation_id": conversation_id,
                                                         "image_id": image_id})


def stored_images(content: list[Any]) -> list[dict[str, Any]]:
    """The blocks of ``content`` that are stored images (by id), in order."""
    return [block for block in content if _stored_image(block)]


def _stored_image(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "image" and "id" in block


def with_image_data(conversation_id: int, messages: list[Message]) -> list[Message]:
    """``messages`` (of ``conversation_id``) with the bytes of each stored image loaded
    (base64 ``data``), for the model; an image whose file is gone, or every image when the
    team's model does not read images (it was switched since), becomes a line of text saying
    so."""
    load: Callable[[Any], ImageBlock | TextBlock] | None = None
    for message in messages:
        if any(_unloaded(b) for b in message.content):
            load = load or _loader(conversation_id)
            message.content = [load(b) if _unloaded(b) else b for b in message.content]
    return messages


def _loader(conversation_id: int) -> Callable[[Any], ImageBlock | TextBlock]:
    conversation = Conversation.objects.select_related("room__team").get(pk=conversation_id)
    model = run_model(conversation)[0]  # the conversation's chosen model, else the team's
    if model is not None and not model_reads_images(model):
        return lambda block: TextBlock(text=IMAGE_LEFT_OUT)
    return partial(_loaded, conversation.room.team_id)


def _unloaded(block: object) -> bool:
    return isinstance(block, ImageBlock) and block.id is not None and not block.data


def _loaded(team_id: int, block: Any) -> ImageBlock | TextBlock:
    try:
        if not _ID.fullmatch(block.id or ""):
            raise FileNotFoundError(block.id)  # only ids this module made name a file
        data = image_path(team_id, block.id or "").read_bytes()
    except OSError:
        logger.warning("image %s of team %s is missing", block.id, team_id)
        return TextBlock(text=f"[image {block.id} is no longer available]")
    return block.model_copy(update={"data": base64.b64encode(data).decode("ascii")})
