"""``results.json``: one submission's result as the result model's plain data
(``SubmissionResult.to_dict``, read back by ``results.from_dict``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grader.files import atomic_write_text
from grader.results import SubmissionResult


def write_results_json(path: Path, result: SubmissionResult,
                       extra: dict[str, Any] | None = None) -> None:
    """Write ``result`` (plus ``extra`` fields, e.g. a cache key) atomically, strict JSON."""
    data = {**result.to_dict(), **(extra or {})}
    atomic_write_text(path, json.dumps(data, indent=2, allow_nan=False) + "\n")
