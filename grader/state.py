"""The learner's small state file: hints seen and last scores, per exercise.

Kept in ``.grade/state.json`` under the current directory; a missing or corrupt file is an
empty state (it is a convenience, never needed to grade).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.files import atomic_write_text

STATE_PATH = Path(".grade") / "state.json"


@dataclass
class State:
    hints_seen: dict[str, int] = field(default_factory=dict)
    last_score: dict[str, list[float]] = field(default_factory=dict)
    path: Path = STATE_PATH

    @classmethod
    def load(cls, path: Path = STATE_PATH) -> State:
        try:
            data: dict[str, Any] = json.loads(path.read_text())
            return cls(hints_seen={k: int(v) for k, v in data.get("hints_seen", {}).items()},
                       last_score={k: [float(x) for x in v]
                                   for k, v in data.get("last_score", {}).items()}, path=path)
        except (OSError, ValueError, TypeError, AttributeError):
            return cls(path=path)

    def save(self) -> None:
        """Write atomically (a temporary file renamed over the old one)."""
        data = {"hints_seen": self.hints_seen, "last_score": self.last_score}
        atomic_write_text(self.path, json.dumps(data, indent=2))
