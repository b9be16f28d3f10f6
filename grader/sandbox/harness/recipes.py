"""Trusted, public recipes that the worker turns into callables for learner code.

A hidden test cannot send a function to the worker (functions are not plain data). It sends a
``Recipe(name, params)`` instead, and the worker builds the callable here, from this public
code. Every recipe's callable maps numpy arrays to numpy arrays (float64 in, float64 out).

To add a recipe: write ``def _name(**params) -> Callable`` and register it in ``RECIPES``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _scale(factor: float = 1.0) -> Callable[[np.ndarray], np.ndarray]:
    """``x -> factor * x``."""
    return lambda x: factor * np.asarray(x, dtype=np.float64)


def _torch_module_fn(module: Any) -> Callable[[np.ndarray], np.ndarray]:
    """Wrap a torch module as a float64 numpy function of one unbatched ``(C, H, W)`` image."""
    import torch

    module = module.double().eval()

    def fn(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            t = torch.as_tensor(np.asarray(x, dtype=np.float64))
            return module(t.unsqueeze(0))[0].numpy()

    return fn


def _conv2d(weight: np.ndarray, bias: np.ndarray | None = None, stride: int = 1,
            circular: bool = True) -> Callable[[np.ndarray], np.ndarray]:
    """A ``torch.nn.Conv2d`` with weights ``(C_out, C, k, k)``: ``(C, H, W) -> (C_out, H', W')``.

    ``circular=True`` pads circularly by ``k // 2`` (odd ``k``); otherwise no padding.
    """
    import torch

    weight = np.asarray(weight, dtype=np.float64)
    c_out, c_in, k, _ = weight.shape
    pad = k // 2 if circular else 0
    conv = torch.nn.Conv2d(c_in, c_out, k, stride=stride, padding=pad,
                           padding_mode="circular" if circular else "zeros",
                           bias=bias is not None)
    with torch.no_grad():
        conv.weight.copy_(torch.as_tensor(weight))
        if bias is not None:
            conv.bias.copy_(torch.as_tensor(np.asarray(bias, dtype=np.float64)))
    return _torch_module_fn(conv)


RECIPES: dict[str, Callable[..., Callable[..., Any]]] = {
    "scale": _scale,
    "conv2d": _conv2d,
}


def build(name: str, params: dict[str, Any]) -> Callable[..., Any]:
    if name not in RECIPES:
        raise KeyError(f"unknown recipe {name!r}")
    return RECIPES[name](**params)
