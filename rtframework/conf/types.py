"""Option types for values oslo.config's own types let through.

``FloatOpt`` compares with min/max only, so ``nan`` (every comparison
false) and ``inf`` without a max pass; a name option accepts '' and any
length. Both would be written to placement or the records as they are.
"""

from __future__ import annotations

import math

from oslo_config import cfg, types

# Placement's limits: amounts are 32-bit signed, a ratio a 32-bit float.
MAX_INT = 2147483647
MAX_RATIO = 3.40282e38
MAX_NAME = 255


class FiniteFloat(types.Float):
    """A float within [min, max] that is a number (not nan, not +-inf)."""

    def __call__(self, value):
        number = super().__call__(value)
        if not math.isfinite(number):
            raise ValueError(f"Should be a finite number, not {value!r}")
        return number


class Name(types.String):
    """A non-blank string of at most ``max_length`` characters."""

    def __init__(self, max_length: int = MAX_NAME,
                 type_name: str = "non-empty string value") -> None:
        super().__init__(max_length=max_length, type_name=type_name)

    def __call__(self, value):
        text = super().__call__(value)
        if not text.strip():
            raise ValueError("Should not be empty")
        if text != text.strip():
            raise ValueError(f"Should not start or end with spaces: {text!r}")
        return text


class FiniteFloatOpt(cfg.Opt):
    def __init__(self, name: str, min: float | None = None, max: float | None = MAX_RATIO,
                 **kwargs) -> None:
        super().__init__(name, type=FiniteFloat(min=min, max=max), **kwargs)


class NameOpt(cfg.Opt):
    def __init__(self, name: str, max_length: int = MAX_NAME, **kwargs) -> None:
        super().__init__(name, type=Name(max_length=max_length), **kwargs)
