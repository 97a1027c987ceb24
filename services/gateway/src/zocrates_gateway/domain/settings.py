"""A user's own settings: how their answers show unsupported claims, and their verification.

Stored per user on the server (`GET`/`PUT /settings`), so the plugin and the web page agree,
and applied where each one matters: `unsupported_claims` by the client as it renders a turn
(the turn keeps the facts: `TurnRecord.unsupported`), `verification_enabled` and
`verification_threshold` by the gateway as it verifies and resolves that user's turns.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, field_validator

#: The threshold a user may choose: 0.50 to 0.95 in steps of 0.05 (seed 4.6).
THRESHOLD_MIN, THRESHOLD_MAX, THRESHOLD_STEP = 0.50, 0.95, 0.05

UnsupportedClaims = Literal["mark", "remove", "leave"]


class UserSettings(BaseModel):
    """What a user chose; a key never set has its default. A stored key this build does not
    know (written by a newer one) is ignored; `SettingsUpdate` refuses unknown keys."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    unsupported_claims: UnsupportedClaims = Field(
        default="mark",
        description="A claim whose every citation failed verification: `mark` it in the prose, "
        "`remove` its sentence, or `leave` it as an uncited statement",
    )
    verification_enabled: bool = Field(default=True, description="Check this user's citations at all")
    verification_threshold: float | None = Field(
        default=None,
        description="The support probability a citation needs, 0.50 to 0.95 in steps of 0.05; "
        "null: the verifier's own threshold",
    )

    @field_validator("verification_threshold")
    @classmethod
    def _on_the_stepper(cls, value: float | None) -> float | None:
        if value is None:
            return None
        steps = (value - THRESHOLD_MIN) / THRESHOLD_STEP
        if not (THRESHOLD_MIN - 1e-9 <= value <= THRESHOLD_MAX + 1e-9 and abs(steps - round(steps)) < 1e-6):
            raise ValueError(
                f"expected {THRESHOLD_MIN:.2f} to {THRESHOLD_MAX:.2f} in steps of {THRESHOLD_STEP:.2f} "
                f"(or null for the verifier's), got {value!r}"
            )
        return round(THRESHOLD_MIN + round(steps) * THRESHOLD_STEP, 2)


class SettingsUpdate(BaseModel):
    """`PUT /settings`: the keys to change; the others keep their values."""

    model_config = ConfigDict(extra="forbid")

    # Strict: "false" or 0 for a switch, "0.7" for a threshold, is a 422, never coerced.
    unsupported_claims: UnsupportedClaims | None = None
    verification_enabled: StrictBool | None = None
    verification_threshold: StrictFloat | None = None

    def applied_to(self, current: UserSettings) -> UserSettings:
        """`current` with this update's keys (a key sent as null: the threshold back to the verifier's)."""
        return UserSettings.model_validate(current.model_dump() | self.model_dump(exclude_unset=True))
