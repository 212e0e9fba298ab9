"""Image uploads and serving (issue 18): the type comes from the bytes, refusals store nothing,
and an image is served only as what it is (the isolation rows are in test_isolation_matrix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.api.schemas import TranscriptOut
from apps.rooms.images import images_attached
from apps.rooms.models import ConversationImage, Message, MessageStatus
from apps.rooms.services.messages import message_post
from tests.images import image_bytes
from tests.integration.api.streams import body

pytestmark = pytest.mark.django_db

SVG = (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="4" height="4">'
       b"<script>alert(1)</script></svg>")


@pytest.fixture
def images_dir(settings, tmp_path) -> Path:
    settings.IMAGES_DIR = tmp_path / "images"
    return settings.IMAGES_DIR


def _upload(client, conversation, data: bytes, *, name: str = "paste.png",
            content_type: str = "image/png"):
    return client.post(f"/api/conversations/{conversation.pk}/images",
                       data={"file": SimpleUploadedFile(name, data, content_type=content_type)})


def _stored(images_dir: Path) -> list[Path]:
    return [p for p in images_dir.rglob("*") if p.is_file()] if images_dir.exists() else []


@pytest.mark.parametrize(("fmt", "media_type"), [
    ("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")])
def test_an_upload_is_kept_as_the_type_its_bytes_are(fmt, media_type, conversation, bob,
                                                      session_client, images_dir) -> None:
    data = image_bytes(5, 7, fmt)
    response = _upload(session_client(bob), conversation, data, name="notes.txt",
                       content_type="text/plain")  # what the client says is not believed
    assert response.status_code == 201, response.content
    body = response.json()
    assert body == {"id": body["id"], "media_type": media_type, "width": 5, "height": 7,
                    "url": f"/api/conversations/{conversation.pk}/images/{body['id']}"}
    path = images_dir / str(conversation.room.team_id) / body["id"]
    assert path.read_bytes() == data
    image = ConversationImage.objects.get(pk=body["id"])
    assert (image.conversation, image.uploaded_by, image.size) == (conversation, bob, len(data))


def test_the_image_is_served_as_its_sniffed_type_and_never_sniffed_again(
        conversation, bob, carol, session_client, images_dir) -> None:
    data = image_bytes(3, 3, "WEBP")
    url = _upload(session_client(bob), conversation, data, content_type="text/html").json()["url"]
    response = session_client(carol).get(url)  # a viewer sees what the room shows
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == data
    assert response["Content-Type"] == "image/webp"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"


@pytest.mark.parametrize(("data", "name"), [
    (SVG, "drawing.svg"),
    (image_bytes(4, 4, "BMP"), "old.bmp"),
    (image_bytes(4, 4, "TIFF"), "scan.tiff"),
    (b"%PDF-1.7\n" + b"0" * 100, "paper.png"),
    (b"", "empty.png"),
])
def test_another_type_is_415_and_nothing_is_stored(data, name, conversation, bob,
                                                   session_client, images_dir) -> None:
    response = _upload(session_client(bob), conversation, data, name=name)
    assert response.status_code == 415, response.content
    assert response.json()["code"] == "unsupported_type"
    assert not ConversationImage.objects.exists()
    assert _stored(images_dir) == []


def test_an_image_over_the_size_is_413_and_nothing_is_stored(conversation, bob, session_client,
                                                             images_dir, settings) -> None:
    data = image_bytes(64, 64, "PNG")
    settings.CONFAB = {**settings.CONFAB, "IMAGE_MAX_BYTES": len(data) - 1}
    response = _upload(session_client(bob), conversation, data)
    assert response.status_code == 413
    assert response.json()["code"] == "too_large"
    assert not ConversationImage.objects.exists()
    assert _stored(images_dir) == []
    settings.CONFAB = {**settings.CONFAB, "IMAGE_MAX_BYTES": len(data)}
    assert _upload(session_client(bob), conversation, data).status_code == 201  # at the limit


@pytest.mark.parametrize("data", [image_bytes(40, 40, "PNG")[:60],  # cut off mid-file
                                  image_bytes(40, 40, "JPEG")[:200]])
def test_a_damaged_image_is_400_and_nothing_is_stored(data, conversation, bob, session_client,
                                                      images_dir) -> None:
    response = _upload(session_client(bob), conversation, data)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid"
    assert not ConversationImage.objects.exists()
    assert _stored(images_dir) == []


def test_images_live_outside_every_workspace(conversation, bob, session_client, settings,
                                             images_dir) -> None:
    image_id = _upload(session_client(bob), conversation, image_bytes()).json()["id"]
    (stored,) = _stored(images_dir)
    assert stored.name == image_id
    assert not stored.resolve().is_relative_to(Path(settings.WORKSPACES_DIR).resolve())


def test_an_image_of_another_conversation_of_the_team_is_404_there(
        conversation, bob, session_client, images_dir) -> None:
    other = conversation.room.conversations.create(title="Other")
    url = _upload(session_client(bob), conversation, image_bytes()).json()["url"]
    image_id = url.rsplit("/", 1)[1]
    response = session_client(bob).get(f"/api/conversations/{other.pk}/images/{image_id}")
    missing = session_client(bob).get(f"/api/conversations/{other.pk}/images/{'0' * 32}")
    assert (response.status_code, response.json()) == (404, missing.json())


def test_deleting_the_conversation_removes_its_images(conversation, alice, session_client,
                                                      images_dir,
                                                      django_capture_on_commit_callbacks) -> None:
    client = session_client(alice)
    _upload(client, conversation, image_bytes())
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"/api/conversations/{conversation.pk}").status_code == 204
    assert not ConversationImage.objects.exists()
    assert _stored(images_dir) == []


def _message_with_image(conversation, alice, client) -> str:
    image_id = _upload(client, conversation, image_bytes(2, 2, "GIF")).json()["id"]
    blocks = images_attached(conversation=conversation, ids=[image_id])
    message_post(conversation=conversation, membership=alice.memberships.get(), text="look",
                 client_id="e1", attachments=blocks)
    return image_id


def test_the_json_export_has_the_image_by_id_url_and_type(conversation, alice, session_client,
                                                          images_dir) -> None:
    client = session_client(alice)
    image_id = _message_with_image(conversation, alice, client)
    doc = json.loads(body(client.get(f"/api/conversations/{conversation.pk}/export.json")))
    TranscriptOut.model_validate(doc)  # the documented schema is what is sent
    (message,) = doc["messages"]
    assert message["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "media_type": "image/gif", "id": image_id,
         "url": f"/api/conversations/{conversation.pk}/images/{image_id}"}]


def test_the_markdown_export_links_the_image(conversation, alice, session_client,
                                             images_dir) -> None:
    client = session_client(alice)
    image_id = _message_with_image(conversation, alice, client)
    text = body(client.get(f"/api/conversations/{conversation.pk}/export.md"))
    assert (f"*[image: image/gif](</api/conversations/{conversation.pk}/images/{image_id}>)*"
            in text)


def _sent_image(conversation, alice, client) -> tuple[int, str]:
    """alice's complete message with an image (no run: forks and edits need none active)."""
    image_id = _upload(client, conversation, image_bytes()).json()["id"]
    message = Message.objects.create(
        conversation=conversation, role="user", position=1, author=alice, author_name="Alice",
        status=MessageStatus.COMPLETE,
        content=[{"type": "text", "text": "look"},
                 {"type": "image", "media_type": "image/png", "id": image_id}])
    return message.pk, image_id


def test_a_fork_has_its_own_copy_of_the_images_and_keeps_them(
        conversation, alice, session_client, images_dir,
        django_capture_on_commit_callbacks) -> None:
    client = session_client(alice)
    message_id, image_id = _sent_image(conversation, alice, client)
    fork = client.post(f"/api/conversations/{conversation.pk}/fork",
                       {"message_id": message_id}, content_type="application/json").json()
    page = client.get(f"/api/conversations/{fork['id']}/messages").json()
    (shown,) = [b for b in page["messages"][0]["content"] if b["type"] == "image"]
    assert shown["id"] != image_id and shown["url"].startswith(
        f"/api/conversations/{fork['id']}/images/")
    assert b"".join(client.get(shown["url"]).streaming_content) == image_bytes()
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"/api/conversations/{conversation.pk}").status_code == 204
    assert b"".join(client.get(shown["url"]).streaming_content) == image_bytes()  # kept


def test_an_edited_message_keeps_its_images(conversation, alice, session_client,
                                            images_dir) -> None:
    client = session_client(alice)
    message_id, image_id = _sent_image(conversation, alice, client)
    response = client.post(f"/api/conversations/{conversation.pk}/messages/{message_id}/edit",
                           {"text": "look again"}, content_type="application/json")
    assert response.status_code == 201, response.content
    edited = Message.objects.get(pk=response.json()["id"])
    assert edited.content == [{"type": "text", "text": "look again"},
                              {"type": "image", "media_type": "image/png", "id": image_id}]
