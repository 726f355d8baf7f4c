"""The one model of a conversation's retention settings, and the wording of its errors for each entry point.

App settings (`AGENT_HOST_RETENTION_MODE`, `AGENT_HOST_MAX_STATE_BYTES`), `add_agent(...)` and
`PUT .../retention` all validate through `RetentionSettings`; each entry point names its own fields in errors.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictInt, model_validator
from pydantic.alias_generators import to_camel

RetentionModeName = Literal["keep_all", "auto", "follow_compaction"]
RETENTION_MODES: tuple[str, ...] = get_args(RetentionModeName)
KEEP_ALL: RetentionModeName = "keep_all"
AUTO: RetentionModeName = "auto"
FOLLOW_COMPACTION: RetentionModeName = "follow_compaction"
# The smallest budget: an empty conversation with a few turn receipts alone takes a few hundred bytes.
MIN_STATE_BYTES = 4096
# 600 KiB: with a 32 KiB message escaped seven-fold in the signal and one answer over budget, an operation stays
# under the Durable Task Scheduler's 1 MB cap on entity state and inputs (docs/scaling.md has the arithmetic).
DEFAULT_MAX_STATE_BYTES = 600 * 1024
# 960 KiB: the largest budget a caller may set. A state this size and a 16 KiB operation envelope stay under the
# Durable Task Scheduler's 1,000,000-byte cap; Azure Storage keeps it in a blob (docs/configuration.md).
MAX_STATE_BYTES_CEILING = 960 * 1024


class RetentionSettings(BaseModel):
    """How much one conversation may store and what may be deleted to stay under it.

    Attributes:
        mode: `keep_all` never deletes; `auto` evicts the oldest messages under pressure; `follow_compaction`
            also deletes what compaction excluded.
        max_state_bytes: The budget for the whole stored state, in UTF-8 bytes (at least 4096).
        high_watermark: Fraction of the budget at which eviction starts.
        low_watermark: Fraction of the budget eviction brings the state down to.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    mode: RetentionModeName = AUTO
    max_state_bytes: StrictInt = Field(default=DEFAULT_MAX_STATE_BYTES, ge=MIN_STATE_BYTES)
    high_watermark: StrictFloat | StrictInt = Field(default=0.85, gt=0, le=1, allow_inf_nan=False)
    low_watermark: StrictFloat | StrictInt = Field(default=0.70, gt=0, lt=1, allow_inf_nan=False)

    @model_validator(mode="after")
    def _low_below_high(self) -> Self:
        if not self.low_watermark < self.high_watermark:
            raise ValueError(
                f"the low watermark ({self.low_watermark}) must be below the high watermark ({self.high_watermark})"
            )
        return self

    def stored(self) -> dict[str, object]:
        """The settings as the state stores them and the API shows them (camelCase)."""
        return self.model_dump(by_alias=True, mode="json")


def _within_ceiling(max_state_bytes: int) -> int:
    if max_state_bytes > MAX_STATE_BYTES_CEILING:
        raise ValueError(
            f"must be at most {MAX_STATE_BYTES_CEILING} (960 KiB), the largest state every durable backend stores"
        )
    return max_state_bytes


SettableStateBytes = Annotated[StrictInt, Field(ge=MIN_STATE_BYTES), AfterValidator(_within_ceiling)]
"""A byte budget as a caller sets it: from `MIN_STATE_BYTES` to `MAX_STATE_BYTES_CEILING`."""


class RetentionChange(RetentionSettings):
    """Retention settings as a caller sets them, the budget at most `MAX_STATE_BYTES_CEILING`.

    Stored settings are read as `RetentionSettings`, without the ceiling, so a conversation given a larger budget
    before the ceiling existed stays readable.
    """

    max_state_bytes: SettableStateBytes = DEFAULT_MAX_STATE_BYTES
