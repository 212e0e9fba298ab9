"""``send.attachments`` images (issue 18): stored on the message by id, shown by id and URL
(never inline) in events and the state frame, refused with the ``client_id`` for an id that is
not this conversation's, and sent to the model with their bytes."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.accounts.models import Membership, User
from apps.integrations.demo import OFFLINE_MODEL
from apps.integrations.models import ModelConfig
from apps.rooms.images import IMAGE_LEFT_OUT, image_upload, images_attached
from apps.rooms.models import Conversation, Message
from apps.rooms.services.messages import message_post
from tests.consumers.conftest import connect
from tests.images import image_bytes

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def images_dir(settings, tmp_path) -> Path:
    settings.IMAGES_DIR = tmp_path / "images"
    return settings.IMAGES_DIR


@sync_to_async
def _upload(conversation: Conversation, user: User, data: bytes) -> str:
    membership = Membership.objects.get(user=user, team_id=conversation.room.team_id)
    return image_upload(conversation=conversation, membership=membership,
                        upload=SimpleUploadedFile("x.png", data)).pk


def _shown(conversation: Conversation, image_id: str, media_type: str = "image/png") -> dict:
    return {"type": "image", "media_type": media_type, "id": image_id,
            "url": f"/api/conversations/{conversation.pk}/images/{image_id}"}


async def test_an_attached_image_is_stored_and_shown_by_id_and_url(
        alice: User, conversation, images_dir) -> None:
    image_id = await _upload(conversation, alice, image_bytes(6, 4, "JPEG"))
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "i1", "text": "what is this?",
                  "attachments": [{"kind": "image", "id": image_id}]})
    event = await a.until_event("user_message")
    assert event["message"]["content"] == [{"type": "text", "text": "what is this?"},
                                           _shown(conversation, image_id, "image/jpeg")]
    stored = await Message.objects.aget(conversation=conversation, client_id="i1")
    assert stored.content[1] == {"type": "image", "media_type": "image/jpeg", "id": image_id}
    b, state = await connect(alice, conversation.pk)  # a fresh state frame: by id and URL too
    (message,) = state["messages"]
    assert message["content"][1] == _shown(conversation, image_id, "image/jpeg")
    await a.close()
    await b.close()


async def test_an_image_attached_twice_is_stored_once(
        alice: User, conversation, images_dir) -> None:
    image_id = await _upload(conversation, alice, image_bytes())
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "i9", "text": "twice",
                  "attachments": [{"kind": "image", "id": image_id}] * 8})
    assert (await a.until(lambda f: f["type"] in ("ack", "error")))["type"] == "ack"
    stored = await Message.objects.aget(conversation=conversation, client_id="i9")
    assert [b["type"] for b in stored.content] == ["text", "image"]
    await a.close()


async def test_an_image_may_go_without_words(alice: User, conversation, images_dir) -> None:
    image_id = await _upload(conversation, alice, image_bytes())
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "i2", "text": "",
                  "attachments": [{"kind": "image", "id": image_id}]})
    assert (await a.until(lambda f: f["type"] in ("ack", "error")))["type"] == "ack"
    stored = await Message.objects.aget(conversation=conversation, client_id="i2")
    assert [b["type"] for b in stored.content] == ["image"]  # no empty text block
    await a.close()


async def test_an_image_of_another_conversation_is_refused_and_nothing_stored(
        alice: User, charlie: User, globex, conversation, images_dir) -> None:
    other = await Conversation.objects.acreate(room=conversation.room, title="Other")
    theirs = await Conversation.objects.acreate(room=await _globex_room(charlie),
                                                title="Theirs")
    elsewhere = await _upload(other, alice, image_bytes())
    foreign = await _upload(theirs, charlie, image_bytes())
    a, _ = await connect(alice, conversation.pk)
    answers = []
    for n, image_id in enumerate([elsewhere, foreign, "0" * 32, "../../etc/passwd"]):
        await a.send({"type": "send", "client_id": f"x{n}", "text": "look",
                      "attachments": [{"kind": "image", "id": image_id}]})
        refused = await a.until(lambda f: f["type"] == "error")
        answers.append((refused["code"], refused["client_id"],
                        refused["message"].replace(repr(image_id), "<id>")))
    assert answers == [("invalid", f"x{n}", "No image <id> was uploaded to this conversation.")
                       for n in range(4)]
    assert not await Message.objects.filter(conversation=conversation).aexists()
    await a.close()


@sync_to_async
def _globex_room(charlie: User):
    return charlie.memberships.get().team.rooms.create(name="Globex room")


async def test_more_images_than_the_setting_are_refused(alice: User, conversation, images_dir,
                                                        settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "IMAGES_PER_MESSAGE": 2}
    ids = [await _upload(conversation, alice, image_bytes()) for _ in range(3)]
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "m1", "text": "three",
                  "attachments": [{"kind": "image", "id": i} for i in ids]})
    refused = await a.until(lambda f: f["type"] == "error")
    assert (refused["code"], refused["client_id"], refused["message"]) == (
        "invalid", "m1", "A message carries at most 2 images.")
    assert not await Message.objects.filter(conversation=conversation).aexists()
    await a.close()


async def test_the_model_gets_the_image_bytes_in_its_own_format(
        alice: User, conversation, images_dir, worker, model_requests) -> None:
    data = image_bytes(8, 8, "PNG")
    image_id = await _upload(conversation, alice, data)
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "r1", "text": "describe it",
                  "attachments": [{"kind": "image", "id": image_id}]})
    await a.until_event("run_ended")
    (request,) = model_requests
    assert request["messages"][-1]["content"] == [
        {"type": "text", "text": "[Alice]"},
        {"type": "text", "text": "describe it"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": base64.b64encode(data).decode()}},
    ]
    events = [f["event"] for f in a.events]
    assert base64.b64encode(data).decode()[:40] not in repr(events)  # never inline
    await a.close()


async def test_a_model_without_vision_gets_a_notice_instead_of_the_image(
        alice: User, conversation, images_dir, model) -> None:
    await ModelConfig.objects.filter(model_id=OFFLINE_MODEL).aupdate(supports_vision=False)
    image_id = await _upload(conversation, alice, image_bytes())
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "v1", "text": "see",
                  "attachments": [{"kind": "image", "id": image_id}]})
    refused = await a.until(lambda f: f["type"] == "error")
    assert (refused["code"], refused["client_id"]) == ("invalid", "v1")
    assert refused["message"] == (
        "The model Offline scripted model does not read images. Send the message without "
        "them, or ask an admin of the team for a model that reads images.")
    assert not await Message.objects.filter(conversation=conversation).aexists()
    await a.close()


async def test_images_sent_before_the_model_lost_vision_are_left_out_of_its_requests(
        alice: User, conversation, images_dir, worker, model_requests) -> None:
    image_id = await _upload(conversation, alice, image_bytes())
    blocks = await sync_to_async(images_attached)(conversation=conversation, ids=[image_id])
    membership = await Membership.objects.aget(user=alice, team_id=conversation.room.team_id)
    await ModelConfig.objects.filter(model_id=OFFLINE_MODEL).aupdate(supports_vision=False)
    a, _ = await connect(alice, conversation.pk)
    await sync_to_async(message_post)(conversation=conversation, membership=membership,
                                      text="earlier", client_id="o1", attachments=blocks)
    await a.until_event("run_ended")
    (request,) = model_requests
    assert request["messages"][-1]["content"] == [
        {"type": "text", "text": "[Alice]"}, {"type": "text", "text": "earlier"},
        {"type": "text", "text": IMAGE_LEFT_OUT}]
    await a.close()
