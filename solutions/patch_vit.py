"""Reference solution: a minimal ViT trunk whose symmetry lives on the patch grid."""

from __future__ import annotations

import torch
from torch import nn


class PatchViT(nn.Module):
    """Patch embedding, optional absolute position table, ``depth`` pre-LN encoder layers.

    ``forward(x)``: ``(B, in_chans, H, W) -> (B, N_p, dim)``, patch tokens in raster order
    (patch ``(r, c)`` is token ``r * W_p + c``), no class token, no dropout, no final norm.

    The layout is the statement's (the grader loads these weights into the learner's model,
    strict): ``patch_embed``, ``pos_embed`` (with a table) and ``encoder``, an
    ``nn.TransformerEncoder`` whose layers are named ``encoder.layers.i.self_attn``,
    ``.linear1``, ``.linear2``, ``.norm1``, ``.norm2``.
    """

    def __init__(self, in_chans: int = 3, patch: int = 8, dim: int = 32, depth: int = 2,
                 heads: int = 2, num_patches: int | None = None,
                 pos_embed: bool = False) -> None:
        super().__init__()
        if pos_embed and (num_patches is None or num_patches < 1):
            raise ValueError("pos_embed=True needs num_patches >= 1 (the table's length), got "
                             f"{num_patches!r}")
        self.patch = patch
        self.patch_embed = nn.Conv2d(in_chans, dim, kernel_size=patch, stride=patch)
        self.pos_embed = (nn.Parameter(torch.zeros(1, num_patches, dim)) if pos_embed
                          else None)
        if self.pos_embed is not None:
            nn.init.trunc_normal_(self.pos_embed, std=0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=0.0,
                                           activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or x.shape[-2] % self.patch or x.shape[-1] % self.patch:
            raise ValueError(f"expected (B, C, H, W) with H and W multiples of {self.patch}, "
                             f"got {tuple(x.shape)}")
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)      # (B, N_p, dim), raster
        if self.pos_embed is not None:
            if tokens.shape[1] != self.pos_embed.shape[1]:
                raise ValueError(f"the image gives {tokens.shape[1]} patches, the position "
                                 f"table has {self.pos_embed.shape[1]}")
            tokens = tokens + self.pos_embed
        return self.encoder(tokens)
