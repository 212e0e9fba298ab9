"""Pagination of list endpoints: ``?limit=`` (1 to 200, default 50) and ``?offset=``; pages
answer ``{"items": [...], "count": <total>}``."""

from __future__ import annotations

from ninja import Field
from ninja.pagination import LimitOffsetPagination

from apps.common.input_schema import InputSchema

__all__ = ["MAX_LIMIT", "Page"]

MAX_LIMIT = 200


class PageQuery(InputSchema):
    limit: int = Field(50, ge=1, le=MAX_LIMIT, description="Items per page.")
    offset: int = Field(0, ge=0, description="Items to skip.")


class Page(LimitOffsetPagination):
    """Limit/offset pages with a bounded ``limit`` (a larger one is ``invalid``)."""

    Input = PageQuery
