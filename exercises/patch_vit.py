"""Exercise: patch_vit — a ViT trunk in PyTorch whose symmetry lives on the patch grid.

Read patch_vit.md, then replace the bodies below. Grade with: grade patch_vit
"""

import torch
from torch import nn


class PatchViT(nn.Module):
    """Patch tokens of a minimal Vision Transformer: no class token, no dropout, no final norm.

    ``__init__(in_chans=3, patch=8, dim=32, depth=2, heads=2, num_patches=None,
    pos_embed=False)`` builds, in this order:

    - a patch embedding ``self.patch_embed = nn.Conv2d(in_chans, dim, kernel_size=patch,
      stride=patch)`` (with bias);
    - when ``pos_embed`` is True, a learned absolute position table ``self.pos_embed``, an
      ``nn.Parameter`` of shape ``(1, num_patches, dim)`` (any initialisation); when it is
      False there is no table and ``num_patches`` is ignored. ``pos_embed=True`` with
      ``num_patches`` None raises ``ValueError``;
    - ``self.encoder``: ``depth`` pre-LN Transformer encoder layers, each equivalent to
      ``nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=0.0,
      activation="gelu", batch_first=True, norm_first=True)``: LayerNorm -> multi-head
      self-attention -> residual, LayerNorm -> MLP dim -> 4*dim -> dim (GELU) -> residual;
      ``nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)`` stacks them.

    The grader loads the reference's weights with ``load_state_dict(state, strict=True)``, so
    ``state_dict()`` holds exactly these entries (``i`` from 0 to ``depth - 1``; no other
    parameter or buffer), as ``nn.TransformerEncoder`` names them:

    - ``patch_embed.weight`` ``(dim, in_chans, patch, patch)``, ``patch_embed.bias`` ``(dim,)``;
    - ``pos_embed`` ``(1, num_patches, dim)``, only with ``pos_embed=True``;
    - ``encoder.layers.i.norm1.weight`` / ``.bias`` ``(dim,)`` (before attention);
    - ``encoder.layers.i.self_attn.in_proj_weight`` ``(3*dim, dim)`` (``[W_q; W_k; W_v]`` by
      rows) and ``.in_proj_bias`` ``(3*dim,)``;
    - ``encoder.layers.i.self_attn.out_proj.weight`` ``(dim, dim)`` / ``.bias`` ``(dim,)``;
    - ``encoder.layers.i.norm2.weight`` / ``.bias`` ``(dim,)`` (before the MLP);
    - ``encoder.layers.i.linear1.weight`` ``(4*dim, dim)`` / ``.bias`` ``(4*dim,)``;
    - ``encoder.layers.i.linear2.weight`` ``(dim, 4*dim)`` / ``.bias`` ``(dim,)``.

    ``forward(x)``: ``x`` is ``(B, in_chans, H, W)`` with ``H`` and ``W`` multiples of
    ``patch``. Returns the patch tokens ``(B, N_p, dim)``, ``N_p = (H / patch) * (W / patch)``,
    in raster order (patch ``(r, c)`` is token ``r * W_p + c``), after adding the position
    table (if any) and running the encoder layers. The output is on ``x``'s device: create
    nothing on a hard-coded device.
    """

    def __init__(self, in_chans=3, patch=8, dim=32, depth=2, heads=2, num_patches=None,
                 pos_embed=False):
        super().__init__()
        raise NotImplementedError

    def forward(self, x):
        raise NotImplementedError
