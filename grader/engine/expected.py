"""Expected values, computed once: in memory for the life of the process, and on disk between
runs and across a bulk run's processes.

The key is the reference module, the function and the call's arguments encoded with the wire
protocol (plain data only; a call whose arguments are not plain data is not cached). The disk
layer stores values in the same format (JSON + ``.npy``, read without pickle), under a folder
named after the pack version, so a changed suite, reference or tolerance never reads an old
value. It is used only when learner code cannot write to it (``strict`` isolation).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.files import atomic_write_bytes
from grader.sandbox.harness import protocol

_MEMORY: dict[str, Any] = {}
_DISK: Path | None = None


def use_disk(folder: Path | None) -> None:
    """Keep expected values under ``folder/<pack version>/`` (None: memory only)."""
    global _DISK
    if folder is None:
        _DISK = None
        return
    from grader import catalog
    from grader.sandbox import isolation

    _DISK = folder / catalog.pack_version() if isolation.probe().level == "strict" else None


def key(reference: Any, func: str, args: tuple, kwargs: dict) -> str | None:
    try:
        frame = protocol.encode_message({"f": func}, [list(args), kwargs])
    except protocol.ProtocolError:
        return None
    return f"{getattr(reference, '__name__', '?')}-{hashlib.sha256(frame).hexdigest()[:40]}"


def _load(k: str) -> tuple[bool, Any]:
    if _DISK is None:
        return False, None
    try:
        return True, protocol.value_from_bytes((_DISK / f"{k}.bin").read_bytes())
    except (OSError, protocol.ProtocolError):
        return False, None


def get_or_compute(k: str | None, compute: Callable[[], Any]) -> Any:
    if k is None:
        return compute()
    if k in _MEMORY:
        return copy.deepcopy(_MEMORY[k])
    found, value = _load(k)
    if not found:
        value = compute()
        if _DISK is not None:
            try:
                atomic_write_bytes(_DISK / f"{k}.bin", protocol.encode_message({}, value))
            except (protocol.ProtocolError, OSError):
                pass
    _MEMORY[k] = copy.deepcopy(value)
    return value
