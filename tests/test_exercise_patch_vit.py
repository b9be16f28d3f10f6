"""patch_vit through the real grader: reference, stub, every known mistake, and the recipes
that the suite applies to the learner's module."""

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
FF = "dim_feedforward=4 * dim, "
ENCODER = "self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)"
RETURN = "return self.encoder(tokens)"
CLS = ("\n        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))")


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed", [(t.name, t.message) for t in result.tests]
    assert result.score == result.max_score == catalog.get(SLUG).points == 14


def test_stub_scores_zero(grade_src):
    result = grade_src(SLUG, catalog.get(SLUG).stub.read_text())
    assert result.score == 0
    assert all(t.status == "failed" for t in result.tests)
    assert "not implemented yet" in by_name(result)["output_shape_and_device"].message


# Mistakes that do not interfere are planted together: four gradings for eight mistakes.
MISTAKE_GROUPS = [
    ([(EMBED, "tokens = self.patch_embed(x).transpose(2, 3).flatten(2).transpose(1, 2)"),
      (FF, ""),
      ("tokens = tokens + self.pos_embed", "pass"),
      (RETURN, "return self.encoder(tokens) + (0 if self.pos_embed is None else self.pos_embed)")],
     {"whole_patch_shift_permutes_tokens": "column_major_tokens",
      "parameter_count": "feedforward_2048",
      "positions_enter_before_encoder": "positions_after_encoder"}),
    ([("tokens = tokens + self.pos_embed", "tokens = tokens"),
      (ENCODER, ENCODER[:-1] + ", norm=nn.LayerNorm(dim))")],
     {"positions_break_whole_patch_shift": "positions_ignored",
      "parameter_count": "extra_final_norm"}),
    ([(ENCODER, ENCODER + CLS),
      (RETURN, "cls = self.cls_token.expand(x.shape[0], -1, -1)\n"
               "        return self.encoder(torch.cat([cls, tokens], dim=1))")],
     {"output_shape_and_device": "class_token_returned",
      "parameter_count": "class_token"}),
    ([(RETURN, "return self.encoder(tokens).mean(dim=1)")],
     {"output_shape_and_device": "pooled_output"}),
]


@pytest.mark.parametrize("edits, expected", MISTAKE_GROUPS)
def test_known_mistakes_are_named(grade_src, edits, expected):
    result = grade_src(SLUG, edit_source(reference_source(SLUG), *edits))
    tests = by_name(result)
    for test, name in expected.items():
        assert tests[test].status == "failed", test
        assert tests[test].mistake == name, (test, tests[test].message)
        assert tests[test].mistake_message.startswith("Your ")


def test_every_known_mistake_is_covered():
    import grader.suites.test_patch_vit as suite
    from grader.suite import mistakes_in

    named = {name for _, expected in MISTAKE_GROUPS for name in expected.values()}
    assert named == {m.name for m in mistakes_in(vars(suite))}


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
