"""Size limits of one filter."""

from __future__ import annotations

from typing import Final

__all__ = [
    "MAX_CONDITIONS",
    "MAX_DEPTH",
    "MAX_FILTER_BYTES",
    "MAX_LIST_VALUES",
    "MAX_NUMBER_DIGITS",
]

MAX_FILTER_BYTES: Final = 16384  # compact UTF-8 JSON
MAX_DEPTH: Final = 10  # nested objects (filters and operator objects); the top level is 1
MAX_LIST_VALUES: Final = 100  # values in one array / in / not_in list
MAX_CONDITIONS: Final = 200  # arrays + in + not_in + exists, in the whole filter
MAX_NUMBER_DIGITS: Final = 4000  # integers beyond this cannot come from a JSON body anyway
