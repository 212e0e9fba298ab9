"""Pagination of list endpoints: ``?limit=`` (1 to 200, default 50) and ``?offset=`` (0 to
:data:`~apps.common.paging.OFFSET_MAX`); pages answer ``{"items": [...], "count": <total>}``."""

from __future__ import annotations

from ninja import Field
from ninja.pagination import LimitOffsetPagination

from apps.common.input_schema import InputSchema
from apps.common.paging import OFFSET_MAX

__all__ = ["MAX_LIMIT", "Page"]

MAX_LIMIT = 200


class PageQuery(InputSchema):
    limit: int = Field(50, ge=1, le=MAX_LIMIT, description="Items per page.")
    offset: int = Field(0, ge=0, le=OFFSET_MAX, description="Items to skip.")


class Page(LimitOffsetPagination):
    """Limit/offset pages with a bounded ``limit`` and ``offset`` (a larger one is
    ``invalid``)."""

    Input = PageQuery
