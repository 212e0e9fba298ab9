"""Images (issue 18): what bytes really are (``sniff``), and each provider's request within that
provider's documented limits (``fit``, called by the three adapters)."""

from __future__ import annotations

import base64
import io
import os
import struct
import zlib

import pytest
from PIL import Image

from apps.engine import images
from apps.engine.images import ImageLimits, ImageRejected, fit, sniff
from apps.engine.messages import ChatRequest, ImageBlock, Message, TextBlock
from apps.engine.providers.anthropic import build_body as anthropic_body
from apps.engine.providers.anthropic.history import IMAGE_LIMITS as ANTHROPIC_LIMITS
from apps.engine.providers.gemini.request import IMAGE_LIMITS as GEMINI_LIMITS
from apps.engine.providers.gemini.request import build_body as gemini_body
from apps.engine.providers.openai_compat import IMAGE_LIMITS as OPENAI_LIMITS
from apps.engine.providers.openai_compat import build_body as openai_body
from apps.engine.providers.profiles import PROFILES
from tests.images import image_bytes

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>'


def _block(data: bytes, media_type: str = "image/png") -> ImageBlock:
    return ImageBlock(media_type=media_type, data=base64.b64encode(data).decode())


def _opened(block: ImageBlock) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(block.data)))


def _request(block: ImageBlock) -> ChatRequest:
    return ChatRequest(model="m", messages=[Message(role="user", content=[
        TextBlock(text="look"), block])])


# -- sniff ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("fmt", "media_type"), [
    ("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")])
def test_sniff_names_the_type_the_bytes_are(fmt: str, media_type: str) -> None:
    assert sniff(image_bytes(7, 5, fmt)) == images.ImageInfo(media_type, 7, 5)


@pytest.mark.parametrize("data", [SVG, image_bytes(3, 3, "BMP"), image_bytes(3, 3, "TIFF"),
                                  image_bytes(3, 3, "ICO"), b"GIF8", b""])
def test_sniff_refuses_every_other_type_as_unsupported(data: bytes) -> None:
    with pytest.raises(ImageRejected) as refused:
        sniff(data)
    assert refused.value.unsupported


def test_a_truncated_image_is_damaged_not_unsupported() -> None:
    with pytest.raises(ImageRejected) as refused:
        sniff(image_bytes(50, 50, "PNG")[:80])
    assert not refused.value.unsupported


def test_an_image_of_too_many_pixels_is_refused_before_it_is_decoded(monkeypatch) -> None:
    monkeypatch.setattr(images, "MAX_PIXELS", 399)
    with pytest.raises(ImageRejected, match="at most 399 pixels") as refused:
        sniff(image_bytes(20, 20, "PNG"))
    assert not refused.value.unsupported
    assert sniff(image_bytes(19, 21, "PNG")).width == 19


def test_a_header_past_pillows_own_bomb_guard_gets_the_pixel_limit_too() -> None:
    """A 57-byte PNG declaring 100000 x 100000 pixels: Pillow refuses it on opening, before
    our own check; the person still hears the limit, not "damaged"."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))
    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 6, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")
    with pytest.raises(ImageRejected, match="at most 50,000,000 pixels") as refused:
        sniff(png)
    assert not refused.value.unsupported


# -- fit -----------------------------------------------------------------------------------
def test_an_image_within_the_limits_goes_unchanged() -> None:
    block = _block(image_bytes(100, 80, "WEBP"), "image/webp").model_copy(update={"id": "i1"})
    assert fit(block, ANTHROPIC_LIMITS) == block


def test_a_larger_image_is_downscaled_to_the_long_edge_keeping_its_aspect() -> None:
    fitted = fit(_block(image_bytes(3000, 1500, "PNG")), ANTHROPIC_LIMITS)
    assert fitted.media_type == "image/png"
    assert _opened(fitted).size == (1568, 784)


def test_a_type_the_provider_does_not_take_is_re_encoded() -> None:
    fitted = fit(_block(image_bytes(10, 10, "GIF"), "image/gif"), GEMINI_LIMITS)
    assert fitted.media_type == "image/png" and _opened(fitted).format == "PNG"


def test_an_animated_gif_goes_to_openai_as_its_first_frame() -> None:
    animated = _block(image_bytes(10, 10, "GIF", frames=3), "image/gif")
    assert fit(animated, ANTHROPIC_LIMITS) == animated  # Anthropic takes it as it is
    fitted = fit(animated, OPENAI_LIMITS)
    assert fitted.media_type == "image/png" and not getattr(_opened(fitted), "is_animated", 0)


def test_an_image_over_the_bytes_is_re_encoded_until_it_fits() -> None:
    noise = Image.frombytes("RGB", (600, 600), os.urandom(600 * 600 * 3))
    out = io.BytesIO()
    noise.save(out, format="PNG")
    limits = ImageLimits(max_edge=600, max_bytes=150_000,
                         media_types=frozenset({"image/png", "image/jpeg"}))
    fitted = fit(_block(out.getvalue()), limits)
    assert len(out.getvalue()) * 4 / 3 > limits.max_bytes  # the PNG is too large
    assert len(fitted.data) <= limits.max_bytes and fitted.media_type == "image/jpeg"


def test_bytes_pillow_cannot_read_go_as_they_came() -> None:
    block = ImageBlock(media_type="image/heic", data="not base64 at all!")
    assert fit(block, GEMINI_LIMITS) == block


def test_a_stored_image_is_serialized_by_id_without_its_bytes() -> None:
    block = ImageBlock(media_type="image/png", data="AAAA", id="abc")
    assert Message(role="user", content=[block]).model_dump(mode="json")["content"] == [
        {"type": "image", "media_type": "image/png", "id": "abc", "url": None}]
    assert ImageBlock(media_type="image/png", data="AAAA").model_dump(exclude_none=True) == {
        "type": "image", "media_type": "image/png", "data": "AAAA"}


# -- each provider's request ---------------------------------------------------------------
def test_anthropic_gets_a_base64_source_within_its_limits() -> None:
    (_, image) = anthropic_body(_request(_block(image_bytes(2000, 2000))))["messages"][0][
        "content"]
    assert image["type"] == "image" and image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/png"
    assert Image.open(io.BytesIO(base64.b64decode(image["source"]["data"]))).size == (1568, 1568)


def test_openai_gets_an_image_url_data_url_within_its_limits() -> None:
    body = openai_body(_request(_block(image_bytes(4096, 1024, "JPEG"), "image/jpeg")),
                       PROFILES["openai"])
    (_, part) = body["messages"][0]["content"]
    prefix, data = part["image_url"]["url"].split(",", 1)
    assert part["type"] == "image_url" and prefix == "data:image/jpeg;base64"
    assert Image.open(io.BytesIO(base64.b64decode(data))).size == (2048, 512)


def test_gemini_gets_inline_data_within_its_limits() -> None:
    body = gemini_body(_request(_block(image_bytes(40, 30, "GIF"), "image/gif")))
    (_, part) = body["contents"][0]["parts"]
    assert part["inlineData"]["mimeType"] == "image/png"  # Gemini takes no GIF
    assert Image.open(io.BytesIO(base64.b64decode(part["inlineData"]["data"]))).size == (40, 30)
