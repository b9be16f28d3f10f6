"""Learner files that spy on what they are sent: the source that wraps an exercise's
functions (and its classes' ``forward``) with a ``_spy`` defined before it."""

from __future__ import annotations


def wrapping(names: tuple[str, ...]) -> str:
    """Source, appended after a ``_spy(fn)`` definition, that wraps each of ``names``."""
    return f'''

for _name in {tuple(names)!r}:
    _target = globals()[_name]
    if isinstance(_target, type):
        if hasattr(_target, "forward"):
            _target.forward = _spy(_target.forward)
    else:
        globals()[_name] = _spy(_target)
'''
