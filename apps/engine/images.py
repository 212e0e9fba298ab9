"""Images: what a file really is, read from its bytes, and an image fitted to a provider's limits.

Pillow reads the bytes; a declared content type is never trusted. Only PNG, JPEG, GIF and WebP
are opened at all (``Image.open(formats=...)``): SVG (a document that can carry script), BMP,
TIFF and the rest are refused before any decoder for them runs.

:func:`sniff` checks an upload; :func:`fit` gives a provider adapter an image within that
provider's documented limits (:class:`ImageLimits`), downscaled or re-encoded when it is not.
"""

from __future__ import annotations

import base64
import hashlib
import io
import warnings
from collections import OrderedDict
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from apps.engine.messages import ImageBlock

__all__ = ["MAX_PIXELS", "MEDIA_TYPES", "ImageInfo", "ImageLimits", "ImageRejected", "fit",
           "sniff"]

MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif",
               "WEBP": "image/webp"}
"""Pillow's format name -> the media type; the only formats accepted."""

MAX_PIXELS = 50_000_000
"""An image of more pixels is refused (a small file can decode to gigabytes: a pixel bomb)."""


class ImageRejected(ValueError):
    """Bytes that are not an accepted image. ``unsupported``: another type of file (or an image
    format that is not accepted); otherwise a damaged or oversized image of an accepted type."""

    def __init__(self, message: str, *, unsupported: bool) -> None:
        super().__init__(message)
        self.unsupported = unsupported


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """What :func:`sniff` found: ``media_type`` (one of :data:`MEDIA_TYPES`), size in pixels."""

    media_type: str
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class ImageLimits:
    """One provider's limits: ``max_edge`` (pixels, the longer side), ``max_bytes`` (the
    base64 text sent, which is 4/3 of the file), ``media_types`` it accepts and whether an
    animated GIF is (``animated_gif``; otherwise its first frame goes, as PNG)."""

    max_edge: int
    max_bytes: int
    media_types: frozenset[str]
    animated_gif: bool = True


def sniff(data: bytes) -> ImageInfo:
    """The image ``data`` holds, decoded in full (a truncated file is found here). Raises
    :class:`ImageRejected`: ``unsupported`` for anything but PNG, JPEG, GIF or WebP; not
    ``unsupported`` for a damaged image or one of more than :data:`MAX_PIXELS` pixels."""
    try:
        with _opened(data) as image:
            info = ImageInfo(MEDIA_TYPES[image.format or ""], *image.size)
            image.load()
    except ImageRejected:
        raise
    except UnidentifiedImageError as exc:
        raise ImageRejected("Only PNG, JPEG, GIF and WebP images are accepted.",
                            unsupported=True) from exc
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError,
            Image.DecompressionBombWarning) as exc:
        raise ImageRejected("The image is damaged or cannot be read.",
                            unsupported=False) from exc
    return info


def _opened(data: bytes) -> Image.Image:
    """``data`` opened lazily (header read), refused past :data:`MAX_PIXELS`."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data), formats=list(MEDIA_TYPES))
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            # Pillow's own guard fires on the header, before ours could: the same refusal
            raise ImageRejected(f"An image has at most {MAX_PIXELS:,} pixels.",
                                unsupported=False) from exc
    width, height = image.size
    if width * height > MAX_PIXELS:
        image.close()
        raise ImageRejected(f"An image has at most {MAX_PIXELS:,} pixels "
                            f"(this one is {width} x {height}).", unsupported=False)
    return image


def fit(block: ImageBlock, limits: ImageLimits) -> ImageBlock:
    """``block`` if it is within ``limits``, else a copy downscaled (aspect kept) and, when
    its type is not accepted or it is still too large, re-encoded (PNG, then JPEG). Bytes
    Pillow cannot read (a tool's or MCP server's image in another format) go as they came:
    the provider is the judge of those. The same image and limits are fitted once
    (memoized): a run sends its history on every call."""
    key = (hashlib.sha256(block.data.encode("ascii", "replace")).digest(), block.media_type,
           limits)  # a digest, not the text: the cache must not keep megabytes alive
    if key in _FITTED:
        fitted = _FITTED[key]
    else:
        try:
            fitted = _fit(block.data, block.media_type, limits)
        except (ValueError, OSError, SyntaxError, Image.DecompressionBombError,
                Image.DecompressionBombWarning):  # ImageRejected, binascii.Error: ValueErrors
            return block
        _FITTED[key] = fitted
        while len(_FITTED) > _FITTED_MAX:
            _FITTED.popitem(last=False)
    _FITTED.move_to_end(key)
    if fitted is None:
        return block
    return fitted.model_copy(update={"id": block.id, "url": block.url})


_FITTED: OrderedDict[tuple[bytes, str, ImageLimits], ImageBlock | None] = OrderedDict()
_FITTED_MAX = 16  # images fitted lately (None: it fits as it is), least recently used go first


def _fit(data: str, media_type: str, limits: ImageLimits) -> ImageBlock | None:
    """The fitted copy of the image, or None when it is within ``limits`` as it is."""
    raw = base64.b64decode(data, validate=True)
    with _opened(raw) as image:
        animated = getattr(image, "is_animated", False)
        fits = (media_type in limits.media_types and max(image.size) <= limits.max_edge
                and len(data) <= limits.max_bytes
                and (limits.animated_gif or not animated))
        if fits:
            return None
        image.seek(0)
        frame = image.convert("RGBA" if _has_alpha(image) else "RGB")
    frame.thumbnail((limits.max_edge, limits.max_edge), Image.Resampling.LANCZOS)
    keep = media_type if media_type in limits.media_types and media_type != "image/gif" else None
    return _encoded(frame, keep, limits)


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info


def _encoded(frame: Image.Image, media_type: str | None, limits: ImageLimits) -> ImageBlock:
    """``frame`` as ``media_type`` (None: PNG), then as JPEG, halving the size until the base64
    text fits ``max_bytes``."""
    kinds = [media_type or "image/png", "image/jpeg"]
    while True:
        for kind in kinds:
            text = _base64(frame, kind)
            if len(text) <= limits.max_bytes:
                return ImageBlock(media_type=kind, data=text)
        if max(frame.size) <= 64:  # nothing this small is over a provider's limit
            return ImageBlock(media_type=kinds[-1], data=text)
        frame = frame.resize((max(1, frame.width // 2), max(1, frame.height // 2)),
                             Image.Resampling.LANCZOS)


def _base64(frame: Image.Image, media_type: str) -> str:
    out = io.BytesIO()
    image = frame.convert("RGB") if media_type == "image/jpeg" else frame
    fmt = {v: k for k, v in MEDIA_TYPES.items()}[media_type]
    image.save(out, format=fmt, **({"quality": 85} if fmt in ("JPEG", "WEBP") else {}))
    return base64.b64encode(out.getvalue()).decode("ascii")
