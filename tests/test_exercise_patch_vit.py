"""patch_vit through the real grader: reference, stub, wrong files with useful messages, and
the recipes that the suite applies to the learner's module (its known mistakes are declared in
solutions/patch_vit.variants.toml, checked by `grade pack check --grade`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import by_name, edit_source, reference_source

from grader import catalog
from grader.engine.plugin import load_reference
from grader.sandbox.harness import recipes

SLUG = "patch_vit"

EMBED = "tokens = self.patch_embed(x).flatten(2).transpose(1, 2)"


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed", [(t.name, t.message) for t in result.tests]
    assert result.score == result.max_score == catalog.get(SLUG).points == 14


def test_stub_scores_zero(grade_src):
    result = grade_src(SLUG, catalog.get(SLUG).stub.read_text())
    assert result.score == 0
    assert all(t.status == "failed" for t in result.tests)
    assert "not implemented yet" in by_name(result)["output_shape_and_device"].message


def test_wrong_submissions_fail_with_useful_messages(grade_src):
    src = edit_source(reference_source(SLUG),
                ("        if pos_embed and (num_patches is None", "        if False and (None"),
                # a fixed ramp added to every token even without a table: order matters now
                (EMBED, EMBED + "\n        tokens = tokens + torch.linspace(0, 1, tokens.shape[1],"
                 " device=x.device)[None, :, None]"))
    tests = by_name(grade_src(SLUG, src))
    need = tests["positions_need_num_patches"]
    assert need.status == "failed"
    assert "should raise ValueError, but it raised TypeError" in need.message
    shift = tests["whole_patch_shift_permutes_tokens"]
    assert shift.status == "failed" and shift.mistake is None
    assert "against the permuted tokens of the original" in shift.message
    assert "outside the tolerance" in shift.message
    assert tests["parameter_count"].status == "passed"


def test_recipes_on_a_module():
    """seeded_init is deterministic and device-independent; set_pos_embed and param_count."""
    ref = load_reference(SLUG)
    a = recipes.seeded_init_(ref.PatchViT(num_patches=6, pos_embed=True), 3)
    b = ref.PatchViT(num_patches=6, pos_embed=True)
    recipes.build("seeded_init", {"seed": 3})(b)
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert na == nb and torch.equal(pa, pb), na
    assert recipes.build("param_count", {})(a) == sum(p.numel() for p in a.parameters())
    table = np.arange(6 * 32, dtype=np.float64).reshape(6, 32)
    recipes.build("set_pos_embed", {"table": table})(a)
    assert torch.equal(a.pos_embed[0], torch.as_tensor(table, dtype=torch.float32))
    with pytest.raises(AttributeError):
        recipes.build("set_pos_embed", {"table": table})(ref.PatchViT())
    recipes.build("to_device", {"device": "cpu"})(a)
    assert a.pos_embed.device.type == "cpu"


def test_load_state_recipe():
    """load_state copies the weights (strict) and names the keys of a different layout."""
    ref = load_reference(SLUG)
    a = recipes.seeded_init_(ref.PatchViT(num_patches=6, pos_embed=True), 1)
    state = {k: v.detach().numpy() for k, v in a.state_dict().items()}
    b = ref.PatchViT(num_patches=6, pos_embed=True)
    recipes.build("load_state", {"state": state})(b)
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb and torch.equal(pa, pb), na
    with pytest.raises(ValueError, match=r"missing: pos_embed \(1, 6, 32\), "
                                         r"encoder\.layers\.1\.self_attn\.in_proj_weight"):
        recipes.build("load_state", {"state": state})(ref.PatchViT(depth=1))
    with pytest.raises(ValueError, match=r"of another shape: patch_embed\.weight is "
                                         r"\(32, 3, 4, 4\), expected \(32, 3, 8, 8\)"):
        recipes.build("load_state", {"state": state})(
            ref.PatchViT(patch=4, num_patches=6, pos_embed=True))


# An encoder written by hand with the documented names: the layout, not nn.TransformerEncoder,
# is the contract (the grader compares tokens within 1e-3, so any order of the sums is fine).
HAND_WRITTEN = '''
import math

import torch
from torch import nn


class _Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.in_proj_weight = nn.Parameter(torch.randn(3 * dim, dim) * 0.02)
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * dim))
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, D = x.shape
        q, k, v = (x @ self.in_proj_weight.T + self.in_proj_bias).split(D, dim=-1)
        q, k, v = (t.reshape(B, N, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        a = (q @ k.transpose(-1, -2) / math.sqrt(D // self.heads)).softmax(-1)
        return self.out_proj((a @ v).transpose(1, 2).reshape(B, N, D))


class _Layer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.self_attn = _Attention(dim, heads)
        self.linear1, self.linear2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x):
        x = x + self.self_attn(self.norm1(x))
        return x + self.linear2(nn.functional.gelu(self.linear1(self.norm2(x))))


class _Encoder(nn.Module):
    def __init__(self, dim, heads, depth):
        super().__init__()
        self.layers = nn.ModuleList(_Layer(dim, heads) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class PatchViT(nn.Module):
    def __init__(self, in_chans=3, patch=8, dim=32, depth=2, heads=2, num_patches=None,
                 pos_embed=False):
        super().__init__()
        if pos_embed and num_patches is None:
            raise ValueError("pos_embed=True needs num_patches")
        self.patch_embed = nn.Conv2d(in_chans, dim, kernel_size=patch, stride=patch)
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, dim)) if pos_embed else None
        self.encoder = _Encoder(dim, heads, depth)

    def forward(self, x):
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)
        if self.pos_embed is not None:
            tokens = tokens + self.pos_embed
        return self.encoder(tokens)
'''


def test_a_hand_written_encoder_with_the_documented_names_scores_full_marks(grade_src):
    result = grade_src(SLUG, HAND_WRITTEN)
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests]
