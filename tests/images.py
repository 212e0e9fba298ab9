"""Real image files for the tests, made with Pillow (the library the server decodes with)."""

from __future__ import annotations

import io

from PIL import Image

__all__ = ["image_bytes"]


def image_bytes(width: int = 4, height: int = 3, fmt: str = "PNG", *,
                color: tuple[int, int, int] = (200, 30, 30), frames: int = 1) -> bytes:
    """An image of ``width`` x ``height`` pixels in Pillow format ``fmt`` (PNG, JPEG, GIF,
    WEBP, BMP, ...); ``frames`` > 1 makes an animated GIF or WebP."""
    out = io.BytesIO()
    images = [Image.new("RGB", (width, height), (color[0], color[1], (color[2] + 40 * i) % 256))
              for i in range(frames)]
    extra = {"save_all": True, "append_images": images[1:]} if frames > 1 else {}
    images[0].save(out, format=fmt, **extra)
    return out.getvalue()
