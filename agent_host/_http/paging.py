"""The query of a paged list route: how many items, and where the previous page ended.

A page's `continuationToken` is the durable host's own token, handed back unchanged; it travels in a header to the
host, so only visible ASCII is accepted.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from .._contract import WireModel

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100
_TOKEN_PATTERN = re.compile(r"[\x20-\x7e]{1,4096}")


class PageQuery(WireModel):
    """`?top=N&continuationToken=...` of a list route; anything else is refused with `invalid_query`."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")
    error_code: ClassVar[str] = "invalid_query"
    lenient_types: ClassVar[bool] = True
    shape: ClassVar[str] = f"?top=<1-{MAX_PAGE_SIZE}>&continuationToken=<the token of the previous page>"

    top: int = Field(default=DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)
    continuation_token: str | None = None

    @field_validator("continuation_token")
    @classmethod
    def _visible_ascii(cls, value: str | None) -> str | None:
        if value is not None and not _TOKEN_PATTERN.fullmatch(value):
            raise ValueError("continuationToken must be the continuationToken of a previous page")
        return value
