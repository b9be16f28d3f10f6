"""The trivial-answer family: files that do no work but return values of the right form.

For each exercise, one file per family, every listed function (or every public method of a
listed class) replaced by a trivial one:

- ``zeros``, ``ones``, ``nan``: the reference's result with every number replaced (same
  types, shapes and dtypes; the reference still raises where it raises);
- ``first_input``: the first argument handed back, untouched.

``grade pack check --grade`` requires each to score nothing, but on the tests the index
entry lists as ``format_only`` (points a statement documents as given for the form alone).
"""

from __future__ import annotations

FAMILIES = {  # name -> what its functions return
    "zeros": "every function returns the reference's result with every number 0",
    "ones": "every function returns the reference's result with every number 1",
    "nan": "every function returns the reference's result with every number NaN",
    "first_input": "every function returns its first argument",
}

_HELPERS = '''

def _trivial_value(value, fill):
    """``value`` with every number replaced by ``fill``, its types, shapes and dtypes kept."""
    import numpy
    if isinstance(value, numpy.ndarray):
        out = numpy.empty_like(value)
        out[...] = fill if value.dtype.kind in "fc" else (0 if fill != 1 else 1)
        return out
    if type(value).__module__.startswith("torch"):
        import torch
        if isinstance(value, torch.Tensor):
            out = torch.empty_like(value)
            return out.fill_(fill if value.is_floating_point() else int(fill == 1))
        return value
    if isinstance(value, bool):
        return bool(fill == 1)
    if isinstance(value, int):
        return int(fill == 1)
    if isinstance(value, float):
        return float(fill)
    if isinstance(value, (list, tuple)):
        return type(value)(_trivial_value(v, fill) for v in value)
    if isinstance(value, dict):
        return {k: _trivial_value(v, fill) for k, v in value.items()}
    return value
'''

_FILL = {"zeros": "0.0", "ones": "1.0", "nan": "float('nan')"}


def _wrap_function(name: str, family: str) -> str:
    if family == "first_input":
        return (f"\n\ndef {name}(*args, **kwargs):\n"
                f"    return args[0] if args else next(iter(kwargs.values()), None)\n")
    return (f"\n\n_trivial_{name} = {name}\n\n\n"
            f"def {name}(*args, **kwargs):\n"
            f"    return _trivial_value(_trivial_{name}(*args, **kwargs), {_FILL[family]})\n")


def _wrap_class(name: str, family: str) -> str:
    body = ("args[0] if args else None" if family == "first_input"
            else f"_trivial_value(method(self, *args, **kwargs), {_FILL[family]})")
    return (f"\n\ndef _trivial_method(method):\n"
            f"    def trivial(self, *args, **kwargs):\n"
            f"        return {body}\n"
            f"    return trivial\n\n\n"
            f"for _name, _method in list(vars({name}).items()):\n"
            f"    if callable(_method) and not _name.startswith('_'):\n"
            f"        setattr({name}, _name, _trivial_method(_method))\n")


def trivial_source(reference: str, functions: tuple[str, ...], family: str) -> str:
    """``reference`` with every name of ``functions`` made trivial the ``family`` way."""
    src = reference + _HELPERS
    for name in functions:
        src += _wrap_class(name, family) if name[:1].isupper() else _wrap_function(name, family)
    return src
