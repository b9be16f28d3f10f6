"""Trusted, public recipes that the worker turns into callables for learner code.

A hidden test cannot send a function to the worker (functions are not plain data). It sends a
``Recipe(name, params)`` instead, and the worker builds the callable here, from this public
code. The hidden suites build the same recipes in the grading process
(``recipes.build(name, params)``), so grader and worker hold identical functions.

Two kinds of recipe:

- image maps, ``(C, H, W)`` float64 numpy array -> ``(C', H', W')`` float64 numpy array
  (``scale``, ``conv2d``, ``circular_conv``, ``patch_embed``, ``patch_transformer``); the
  seeded ones draw their weights from ``torch.Generator().manual_seed(seed)``, in float64 on
  the CPU, so two processes with the same torch build the same function;
- helpers applied to a learner's ``torch.nn.Module`` passed as a handle (``param_count``,
  ``seeded_init``, ``set_pos_embed``, ``load_state``, ``to_device``).

To add a recipe: write ``def _name(**params) -> Callable`` and register it in ``RECIPES``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def _scale(factor: float = 1.0) -> Callable[[np.ndarray], np.ndarray]:
    """``x -> factor * x``."""
    return lambda x: factor * np.asarray(x, dtype=np.float64)


def _image_tensor(x: np.ndarray) -> Any:
    """A float64 ``(1, C, H, W)`` CPU tensor from one ``(C, H, W)`` image."""
    import torch

    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"expected one (C, H, W) image, got an array of shape {x.shape}")
    return torch.from_numpy(x).unsqueeze(0)


def _torch_module_fn(module: Any) -> Callable[[np.ndarray], np.ndarray]:
    """Wrap a torch module as a float64 numpy function of one unbatched ``(C, H, W)`` image."""
    import torch

    module = module.double().eval()

    def fn(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return module(_image_tensor(x))[0].numpy()

    return fn


def _generator(seed: int) -> Any:
    import torch

    return torch.Generator(device="cpu").manual_seed(int(seed))


def _randn(gen: Any, *shape: int, std: float = 1.0) -> Any:
    import torch

    return torch.randn(*shape, generator=gen, dtype=torch.float64) * std


def _conv2d(weight: np.ndarray, bias: np.ndarray | None = None, stride: int = 1,
            circular: bool = True) -> Callable[[np.ndarray], np.ndarray]:
    """A ``torch.nn.Conv2d`` of weights ``(C_out, C, k, k)``: ``(C, H, W) -> (C_out, H', W')``.

    ``circular=True`` pads circularly by ``k // 2`` (odd ``k``); otherwise no padding.
    """
    import torch

    weight = np.asarray(weight, dtype=np.float64)
    c_out, c_in, k, _ = weight.shape
    if circular and k % 2 == 0:
        raise ValueError(f"a circular conv2d recipe needs an odd kernel size, got {k}")
    pad = k // 2 if circular else 0
    conv = torch.nn.Conv2d(c_in, c_out, k, stride=stride, padding=pad,
                           padding_mode="circular" if circular else "zeros",
                           bias=bias is not None).double()  # float64 before the copy
    with torch.no_grad():
        conv.weight.copy_(torch.as_tensor(weight))
        if bias is not None:
            conv.bias.copy_(torch.as_tensor(np.asarray(bias, dtype=np.float64)))
    return _torch_module_fn(conv)


def _circular_conv(c_in: int = 3, c_out: int = 8, k: int = 3, stride: int = 1,
                   seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """A seeded circular ``Conv2d(c_in, c_out, k, stride, padding=k // 2)`` with a bias.

    Weights ~ N(0, 1 / (c_in k²)), bias ~ N(0, 0.1²), drawn from ``seed``. With stride ``s``
    the output is the stride-1 output kept on every ``s``-th row and column.
    """
    gen = _generator(seed)
    weight = _randn(gen, c_out, c_in, k, k, std=1 / math.sqrt(c_in * k * k))
    bias = _randn(gen, c_out, std=0.1)
    return _conv2d(weight.numpy(), bias.numpy(), stride=stride, circular=True)


def _patch_embed(c_in: int = 3, dim: int = 32, patch: int = 8,
                 seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """A seeded patch embedding ``Conv2d(c_in, dim, kernel_size=patch, stride=patch)``.

    ``(C, H, W) -> (dim, H / patch, W / patch)``: one token per patch, laid out on the grid.
    """
    import torch

    conv = torch.nn.Conv2d(c_in, dim, patch, stride=patch).double()
    seeded_init_(conv, seed)
    return _torch_module_fn(conv)


class _PatchTransformer:
    """Patch embedding, optional absolute position table, pre-LN ``TransformerEncoder``."""

    def __init__(self, c_in: int, dim: int, patch: int, depth: int, heads: int,
                 grid: tuple[int, int] | None, pos_std: float, seed: int) -> None:
        import torch

        self.dim = dim
        self.embed = torch.nn.Conv2d(c_in, dim, patch, stride=patch)
        layer = torch.nn.TransformerEncoderLayer(
            dim, heads, dim_feedforward=4 * dim, dropout=0.0, activation="gelu",
            batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.embed.double().eval()
        self.encoder.double().eval()
        seeded_init_(self.embed, seed)
        seeded_init_(self.encoder, seed + 1)  # the layers start different, not deep copies
        self.grid = None if grid is None else (int(grid[0]), int(grid[1]))
        self.pos = None
        if self.grid is not None:
            n_p = self.grid[0] * self.grid[1]
            self.pos = _randn(_generator(seed + 2), 1, n_p, dim, std=pos_std)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            fmap = self.embed(_image_tensor(x))             # (1, d, H_p, W_p)
            _, d, h_p, w_p = fmap.shape
            tokens = fmap.flatten(2).transpose(1, 2)         # (1, N_p, d), raster order
            if self.pos is not None:
                if (h_p, w_p) != self.grid:
                    raise ValueError(f"the position table is for a {self.grid} grid, the "
                                     f"image gives {(h_p, w_p)}")
                tokens = tokens + self.pos
            out = self.encoder(tokens)[0]                    # (N_p, d)
            return out.transpose(0, 1).reshape(d, h_p, w_p).contiguous().numpy()


def _patch_transformer(c_in: int = 3, dim: int = 32, patch: int = 8, depth: int = 2,
                       heads: int = 2, grid: tuple[int, int] | list[int] | None = None,
                       pos_std: float = 1.0, seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """A seeded patch embedding followed by a ``depth``-layer pre-LN ``TransformerEncoder``.

    Layers: ``TransformerEncoderLayer(dim, heads, dim_feedforward=4*dim, dropout=0,
    activation="gelu", batch_first=True, norm_first=True)``; no class token, no final norm.
    ``grid=(H_p, W_p)`` adds an absolute position table ``N(0, pos_std²)`` of ``H_p*W_p`` rows
    to the tokens before the encoder (the image must then give that grid); ``None``: no
    positions. The output tokens ``(N_p, d)`` come back as a ``(d, H_p, W_p)`` map (token
    ``r*W_p + c`` at ``[:, r, c]``).
    """
    return _PatchTransformer(c_in, dim, patch, depth, heads,
                             None if grid is None else tuple(grid), pos_std, seed)


# -- helpers applied to a learner's torch module (passed as a handle) ---------------------

def seeded_init_(module: Any, seed: int) -> Any:
    """Re-initialise every parameter of ``module`` in place from ``seed``; return ``module``.

    Walks ``module.named_modules()`` in order and, for each, its own parameters:
    ``LayerNorm`` weight ~ 1 + N(0, 0.1²) and bias ~ N(0, 0.1²); any other parameter of two or
    more dimensions ~ N(0, 1 / fan_in) with ``fan_in = numel / shape[0]``; one-dimensional
    ones ~ N(0, 0.1²). Values are drawn in float64 on the CPU, then cast to each parameter's
    dtype and device, so the result does not depend on the device.
    """
    import torch

    gen = _generator(seed)
    with torch.no_grad():
        for _, sub in module.named_modules():
            is_norm = isinstance(sub, torch.nn.LayerNorm)
            for name, p in sub.named_parameters(recurse=False):
                if is_norm and name == "weight":
                    new = 1.0 + _randn(gen, *p.shape, std=0.1)
                elif p.dim() >= 2:
                    new = _randn(gen, *p.shape, std=1 / math.sqrt(p.numel() / p.shape[0]))
                else:
                    new = _randn(gen, *p.shape, std=0.1)
                p.copy_(new.to(dtype=p.dtype, device=p.device))
    return module


def _seeded_init(seed: int = 0) -> Callable[[Any], None]:
    """``module -> None``: re-initialise every parameter from ``seed`` (``seeded_init_``)."""

    def fn(module: Any) -> None:
        seeded_init_(module, seed)

    return fn


def _param_count(trainable_only: bool = False) -> Callable[[Any], int]:
    """``module -> int``: the number of scalars in ``module.parameters()``."""

    def fn(module: Any) -> int:
        return int(sum(p.numel() for p in module.parameters()
                       if p.requires_grad or not trainable_only))

    return fn


def _set_pos_embed(table: np.ndarray) -> Callable[[Any], None]:
    """``module -> None``: copy ``table`` ``(N_p, d)`` into ``module.pos_embed``.

    ``module.pos_embed`` must be a tensor of ``N_p * d`` elements (e.g. ``(1, N_p, d)``); the
    table is reshaped to its shape and cast to its dtype and device.
    """
    table = np.asarray(table, dtype=np.float64)

    def fn(module: Any) -> None:
        import torch

        pos = getattr(module, "pos_embed", None)
        if not isinstance(pos, torch.Tensor):
            raise AttributeError("the model has no tensor attribute 'pos_embed' (the position "
                                 "table the contract names)")
        if pos.numel() != table.size:
            raise ValueError(f"pos_embed has shape {tuple(pos.shape)}, expected "
                             f"{table.size} = {table.shape[0]} x {table.shape[1]} values")
        with torch.no_grad():
            pos.copy_(torch.as_tensor(table).reshape(pos.shape).to(pos.dtype))

    return fn


def _load_state(state: dict[str, np.ndarray]) -> Callable[[Any], None]:
    """``module -> None``: ``module.load_state_dict(state, strict=True)``.

    ``state`` maps parameter names to arrays (the reference's weights); each is cast to its
    parameter's dtype and device. The names and shapes are compared with
    ``module.state_dict()`` first: any difference raises ``ValueError`` naming the keys that
    are missing, unexpected or of another shape (at most four of each).
    """
    state = {str(k): np.array(v) for k, v in state.items()}

    def fn(module: Any) -> None:
        import torch

        own = {k: tuple(v.shape) for k, v in module.state_dict().items()}
        problems = []
        for what, keys in (
                ("missing", [f"{k} {v.shape}" for k, v in state.items() if k not in own]),
                ("unexpected", [f"{k} {own[k]}" for k in own if k not in state]),
                ("of another shape", [f"{k} is {own[k]}, expected {v.shape}"
                                      for k, v in state.items()
                                      if k in own and own[k] != v.shape])):
            if keys:
                more = f" (and {len(keys) - 4} more)" if len(keys) > 4 else ""
                problems.append(f"{what}: {', '.join(keys[:4])}{more}")
        if problems:
            raise ValueError("the state_dict keys differ from the documented layers; "
                             + "; ".join(problems))
        module.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)

    return fn


def _to_device(device: str = "cpu") -> Callable[[Any], None]:
    """``module -> None``: ``module.to(device)`` (the returned module stays in the worker)."""

    def fn(module: Any) -> None:
        module.to(device)

    return fn


RECIPES: dict[str, Callable[..., Callable[..., Any]]] = {
    "scale": _scale,
    "conv2d": _conv2d,
    "circular_conv": _circular_conv,
    "patch_embed": _patch_embed,
    "patch_transformer": _patch_transformer,
    "seeded_init": _seeded_init,
    "param_count": _param_count,
    "set_pos_embed": _set_pos_embed,
    "load_state": _load_state,
    "to_device": _to_device,
}


def build(name: str, params: dict[str, Any]) -> Callable[..., Any]:
    if name not in RECIPES:
        raise KeyError(f"unknown recipe {name!r}")
    return RECIPES[name](**params)
