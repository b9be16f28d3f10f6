"""The numbers inside a call's arguments or a value: a leaf both the check and the confirm
tables read (summaries of inputs, a trivial answer's values)."""

from __future__ import annotations

from typing import Any

import numpy as np


def numeric_arrays(value: Any, depth: int = 0) -> list[np.ndarray]:
    """The numeric arrays and numbers inside an argument (lists, tuples, dicts, tensors)."""
    if depth > 4:
        return []
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in numeric_arrays(v, depth + 1)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in numeric_arrays(v, depth + 1)]
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        try:
            value = value.detach().cpu().float().numpy()
        except Exception:  # noqa: BLE001 - an unusual tensor: not summarised
            return []
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes)) or value is None:
        return []
    if isinstance(value, (int, float, np.number, np.ndarray)):
        arr = np.asarray(value)
        return [arr] if arr.dtype.kind in "iuf" else []
    return []
