"""`option`: a settings dataclass field that is also a command-line flag.

It sits below data, models and training, so that every layer's settings (a document reader's options,
a run's sections, a method's options) are declared the same way without importing the layers above.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Tuple


def option(default: Any = dataclasses.MISSING, help: str = "", choices: Optional[Tuple[str, ...]] = None,
           lower_bound: Optional[float] = None, flag: Optional[str] = None):
    """A config field that is also a command-line flag.

    Args:
        default: The default value (tuples for list flags).
        help: str. The flag's help text.
        choices: tuple of str. Allowed values (an enum flag).
        lower_bound: number. Smallest allowed value, checked by `check_field`.
        flag: str. The flag's name when it differs from the field's.
    """
    meta = {"help": help, "choices": choices, "lower_bound": lower_bound, "flag": flag}
    return dataclasses.field(default=default, metadata=meta)
