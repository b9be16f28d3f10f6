"""A number of bytes in words, for messages: defined here, in the harness, because the wire
protocol (``protocol.py``) writes sizes inside the worker, where the grader's package cannot
be imported; the grader's side reaches these as ``grader.numbers.size`` and
``grader.numbers.whole_mib``. Standard library only."""

from __future__ import annotations

_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def size(n_bytes: int) -> str:
    """``n_bytes`` in the largest binary unit it reaches, three significant digits (whole
    units from 1000 on, never an exponent): ``3 GiB``, ``1.5 MiB``, ``512 KiB``, ``1023 KiB``,
    ``12 bytes`` (a submission's limits)."""
    for unit, scale in _UNITS:
        if n_bytes >= scale:
            value = n_bytes / scale
            text = f"{value:.3g}"
            return f"{value:.0f} {unit}" if "e" in text else f"{text} {unit}"
    return f"{n_bytes} bytes"


def whole_mib(n_bytes: int) -> str:
    """``n_bytes`` in whole MiB from 1 MiB on, rounded (``64 MiB``, ``3072 MiB``), else in
    bytes (``524288 bytes``): the wire protocol's limits."""
    return f"{n_bytes / 2**20:.0f} MiB" if n_bytes >= 2**20 else f"{n_bytes} bytes"
