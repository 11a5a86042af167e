"""The base of every schema model: unknown keys rejected, no infinities."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

LanguageCode = Annotated[str, Field(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")]  # "en", "en-US", "ja"


class Strict(BaseModel):
    # allow_inf_nan=False: ".inf", "1e999" and ".nan" are no setting (issue 28); every number
    # also has a range (tests/test_setting_ranges.py checks that none is left open).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)
