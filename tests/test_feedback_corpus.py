"""A feedback corpus: wrong variants a learner is likely to write, none of them a catalogued
mistake, graded through the real engine; nothing in their feedback may name a cause they do
not have.

Per exercise of the pack, at least three variants of the reference solution (an edit or two
each). All of them are graded in one pytest session of the engine (``grade_each``: variant
``i`` of every exercise is submission ``i``), then every failing test is checked:

- no known mistake is named (the variants are not catalogued mistakes, and a mistake that
  matches one input by chance must not be confirmed by the suite's probes);
- the test's own hint is shown exactly when the failure is of a kind its ``hint_for`` names
  (a NaN hint never beside a failure without NaN), and never for a file that is not
  implemented;
- the kind hint is about something the failure shows (NaN in the message for a NaN hint, a
  wrong shape for a shape hint, ...), and what it says about where the values are wrong
  agrees with the measured diagnostics (the count, the row or column of the worst value);
- no kind hint guesses a cause from a pattern (the old "look at how your code treats the
  borders" and its kind).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import reference_variant

from grader import catalog
from grader.engine.results import SubmissionResult, TestResult
from grader.engine.runner import Job, grade_each

NOT_IMPLEMENTED = ("    return _train(X, y, int(steps), float(lr), seed)",
                   "    raise NotImplementedError(\"training: next\")")


@dataclass(frozen=True)
class Variant:
    name: str
    edits: tuple[tuple[str, str], ...]
    # tests that must fail, with the failure kind they must show (the variant does its job)
    expect: dict[str, str] = field(default_factory=dict)


CORPUS: dict[str, list[Variant]] = {
    "grid_local_mask": [
        Variant("only_the_first_prefix_token_freed", (
            ("    mask = np.ones((T, T), dtype=bool)\n",
             "    mask = np.zeros((T, T), dtype=bool)\n    mask[0, :] = True\n"
             "    mask[:, 0] = True\n"),), {"several_prefix_tokens": "values"}),
        Variant("columns_wrap_around", (
            ("near_cols = np.abs(c[:, None] - c[None, :]) <= radius",
             "near_cols = np.minimum(np.abs(c[:, None] - c[None, :]),\n"
             "                           W_p - np.abs(c[:, None] - c[None, :])) <= radius"),),
            {"no_prefix": "values", "large_grid": "values"}),
        Variant("window_one_step_too_wide", (
            ("near_rows = np.abs(r[:, None] - r[None, :]) <= radius",
             "near_rows = np.abs(r[:, None] - r[None, :]) <= radius + 1"),
            ("near_cols = np.abs(c[:, None] - c[None, :]) <= radius",
             "near_cols = np.abs(c[:, None] - c[None, :]) <= radius + 1")),
            {"radius_0": "values", "square_grid_radius_1": "values"}),
        Variant("arguments_not_validated", (
            ("    if H_p < 1 or W_p < 1:\n        raise ValueError(f\"the grid must have at "
             "least one row and column, got {H_p}x{W_p}\")\n    if radius < 0:\n"
             "        raise ValueError(f\"radius must be >= 0, got {radius}\")\n", ""),),
            {"invalid_arguments_raise": "not_raised"}),
    ],
    "attention_rollout": [
        Variant("columns_renormalised", (
            ("A_hat /= A_hat.sum(axis=-1, keepdims=True)",
             "A_hat /= A_hat.sum(axis=-2, keepdims=True)"),),
            {"three_layers_four_heads": "values"}),
        Variant("heads_summed", (
            ("A_hat = 0.5 * A.mean(axis=0) + 0.5 * np.eye(T)",
             "A_hat = 0.5 * A.sum(axis=0) + 0.5 * np.eye(T)"),),
            {"three_layers_four_heads": "values"}),
        Variant("one_prefix_token_assumed", (
            ("return R[0, n_prefix:].reshape(H_p, W_p)", "return R[0, 1:].reshape(H_p, W_p)"),),
            {"several_prefix_tokens": "raised"}),
    ],
    "mean_attention_distance": [
        Variant("squared_distance", (
            ("P * np.sqrt((rows[:, None] - rows[None, :]) ** 2 + (cols[:, None] - "
             "cols[None, :]) ** 2)",
             "P * ((rows[:, None] - rows[None, :]) ** 2 + (cols[:, None] - "
             "cols[None, :]) ** 2)"),), {"one_image": "values"}),
        Variant("averaged_over_heads_too", (
            ("return per_query.mean(axis=(0, 2))", "return per_query.mean()"),),
            {"one_image": "shape"}),
        Variant("prefix_queries_kept", (
            ("patches = A[..., n_prefix:, n_prefix:]", "patches = A[..., :, n_prefix:]"),),
            {"one_image": "raised"}),
    ],
    "shift_equivariance": [
        Variant("mean_gap_not_largest", (
            ("        err = float(np.abs(shifted - expected).max())",
             "        err = float(np.abs(shifted - expected).mean())"),),
            {"positions_break_whole_patch_shift": "values"}),
        Variant("zero_output_divides_by_zero", (
            ("    scale = scale if scale > 0 else 1.0\n", ""),
            ("    return err / scale\n", "    return float(np.float64(err) / scale)\n")),
            {"zero_output_denominator": "nan"}),
        Variant("rows_not_wrapped", (
            ("new = ((r + dr) % H_p) * W_p + (c + dc) % W_p",
             "new = (r + dr) * W_p + (c + dc) % W_p"),),
            {"permutation_non_square": "raised"}),
    ],
    "conv_via_attention": [
        Variant("distance_not_squared", (
            ("    return np.minimum(diff, n - diff) ** 2",
             "    return np.minimum(diff, n - diff)"),),
            {"one_d_small": "values"}),
        Variant("columns_flipped_in_2d", (
            ("PW = _head_weights(X.shape[1], k, alpha)",
             "PW = _head_weights(X.shape[1], k, alpha)[::-1]"),),
            {"two_d_small": "values"}),
        Variant("rho_stops_early", (
            ("int(math.ceil(math.sqrt(40.0 / alpha)))",
             "int(math.ceil(math.sqrt(18.0 / alpha)))"),),
            {"rho_extremes": "precision"}),
        Variant("even_kernel_accepted", (
            ("    if k % 2 == 0:\n        raise ValueError(f\"the kernel size must be odd, got "
             "{k}\")\n", ""),), {"invalid_arguments_raise": "not_raised"}),
    ],
    "inductive_bias_toy": [
        Variant("gain_uses_sine", (
            ("gain = 1.0 + beta * np.cos(2 * np.pi * np.arange(n) / n)",
             "gain = 1.0 + beta * np.sin(2 * np.pi * np.arange(n) / n)"),),
            {"toy_targets_small": "values"}),
        Variant("full_map_error_never_infinite", (
            ("full = s2 + s2 * n / (N - n - 1) if N > n + 1 else math.inf",
             "full = s2 + s2 * n / max(N - n - 1, 1e-12)"),),
            {"predicted_errors_edges": "inf"}),
        Variant("right_end_zero_padded", (
            ("np.roll(X, -1, axis=1)     # X[:, t-1] - X[:, t+1]",
             "np.concatenate([X[:, 1:], np.zeros_like(X[:, :1])], axis=1)"),),
            {"toy_targets_small": "values"}),
        Variant("normal_equations", (
            ("return np.linalg.lstsq(X, Y, rcond=None)[0]",
             "return np.linalg.solve(X.T @ X, X.T @ Y)"),),
            {"full_map_underdetermined": "values"}),
    ],
    "shape_bias": [
        Variant("none_when_nothing_counts", (
            ("    if decided == 0:\n        return math.nan\n",
             "    if decided == 0:\n        return None\n"),),
            {"nan_when_nothing_counts": "none"}),
        Variant("shape_over_texture", (
            ("return n_shape / decided", "return n_shape / n_texture"),),
            {"seed_six_trials": "values", "extremes": "raised"}),
        Variant("lengths_not_checked", (
            ("    if not len(pred) == len(shape) == len(texture):\n", "    if False:\n"),),
            {"unequal_lengths_raise": "not_raised"}),
    ],
    "compute_frontier": [
        Variant("frontier_most_expensive_first", (
            ("return order[a_sorted > best_cheaper].tolist()",
             "return order[a_sorted > best_cheaper].tolist()[::-1]"),),
            {"frontier_table6_vits": "values", "match_geometric_midpoint": "nan"}),
        Variant("no_interpolation", (
            ("return float(np.exp((1.0 - w) * np.log(fc[j - 1]) + w * np.log(fc[j])))",
             "return float(fc[j - 1])"),), {"match_geometric_midpoint": "values"}),
        Variant("inf_outside_the_range", (
            ("a NaN target lands here too\n        return math.nan",
             "a NaN target lands here too\n        return math.inf"),),
            {"match_outside_range_is_nan": "nan"}),
    ],
    "patch_vit": [
        Variant("tokens_as_columns", (
            ("        return self.encoder(tokens)", "        return self.encoder(tokens).mT"),),
            {"output_shape_and_device": "shape"}),
        Variant("patch_embedding_without_bias", (
            ("nn.Conv2d(in_chans, dim, kernel_size=patch, stride=patch)",
             "nn.Conv2d(in_chans, dim, kernel_size=patch, stride=patch, bias=False)"),),
            {"parameter_count": "values"}),
        Variant("positions_added_twice", (
            ("tokens = tokens + self.pos_embed", "tokens = tokens + 2 * self.pos_embed"),),
            {"same_tokens_as_reference_with_positions": "values"}),
    ],
    "positional_attention": [
        Variant("softmax_not_stabilised", (
            ("    Z = Q - Q.max(axis=1, keepdims=True)\n    E = np.exp(Z)\n",
             "    E = np.exp(Q)\n"), NOT_IMPLEMENTED), {"forward_large_logits": "nan"}),
        Variant("ties_all_counted", (
            ("credit = (same & above).sum(axis=1) + free * (same & tied).sum(axis=1) / "
             "tied.sum(axis=1)", "credit = (same & (above | tied)).sum(axis=1)"),
            NOT_IMPLEMENTED), {"association_uniform_is_chance": "values"}),
        Variant("loss_summed_not_averaged", (
            ("g = -y * np.exp(-np.logaddexp(0.0, margin)) / N",
             "g = -y * np.exp(-np.logaddexp(0.0, margin))"),),
            {"training_first_steps_exact": "nan", "training_invalid": "values"}),
    ],
}

# What kind hints said before they were observations: causes guessed from a pattern.
GUESSES = ("look at how your code treats", "wrap-around, padding", "a normalisation is missing",
           "a subtraction the other way round", "tokens missing", "added twice, or",
           "a batch or heads axis kept", "right up to their sign: a")
# Faults whose message says everything: no test hint beside them.
SELF_EXPLAINED = ("not implemented yet", "was not submitted", "not run:")


def _variant_source(slug: str, variant: Variant) -> str:
    return reference_variant(slug, *variant.edits)


def grade_corpus(root: Path) -> dict[tuple[str, str], list[TestResult]]:
    """Every variant graded, ``(slug, variant) -> test results``: submission ``i`` holds
    variant ``i`` of every exercise that has one, all in one session of the engine."""
    jobs = []
    for i in range(max(len(v) for v in CORPUS.values())):
        folder = root / f"submission-{i}"
        folder.mkdir()
        files: dict[str, Path | None] = {}
        for slug, variants in CORPUS.items():
            if i < len(variants):
                files[slug] = folder / f"{slug}.py"
                files[slug].write_text(_variant_source(slug, variants[i]))
        jobs.append(Job(files, f"submission-{i}"))
    outcomes: list[SubmissionResult | Exception] = []
    grade_each(list(CORPUS), jobs, lambda job, outcome: outcomes.append(outcome))
    found = {}
    for i, outcome in enumerate(outcomes):
        assert isinstance(outcome, SubmissionResult), outcome
        for ex in outcome.exercises:
            found[ex.exercise, CORPUS[ex.exercise][i].name] = ex.tests
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[tuple[str, str], list[TestResult]]:
    return grade_corpus(tmp_path_factory.mktemp("corpus"))


def _markers(slug: str) -> dict[str, dict]:
    module = importlib.import_module(f"grader.suites.test_{slug}")
    return {name.removeprefix("test_"): next(m.kwargs for m in fn.pytestmark
                                             if m.name == "grading")
            for name, fn in vars(module).items() if name.startswith("test_")}


def _kinds(t: TestResult) -> set[str]:
    """The failure kinds (``hints.HINT_KINDS``) a failed test shows, read off its result."""
    if any(s in t.message for s in SELF_EXPLAINED) or t.status == "not_run":
        return set()
    if t.status in ("error", "timeout", "crashed"):
        return {"raised" if t.status == "error" else t.status} | (
            {"large"} if t.kind == "large" else set())
    return {{"none": "type", "tolerance": "values"}.get(t.kind or "values", t.kind or "values")}


def _numbers(text: str) -> set[int]:
    """The indices of "0, 2 and 5" or "3 to 6"."""
    m = re.fullmatch(r"(\d+) to (\d+)", text)
    if m:
        return set(range(int(m.group(1)), int(m.group(2)) + 1))
    return {int(n) for n in re.findall(r"\d+", text)}


def _check_observations(t: TestResult) -> None:
    """What a "where it is wrong" hint states agrees with the measured diagnostics."""
    hint, diag = t.kind_hint, t.diagnostics or {}
    m = re.search(r"All (\d+) wrong values", hint)
    if m and "n_outside" in diag:
        assert int(m.group(1)) == diag["n_outside"], hint
    worst = diag.get("worst_index")
    for axis, word in ((0, "row"), (1, "column")):
        m = re.search(rf"\bin {word}s? ([\d, ]+(?: and \d+| to \d+)?)\b", hint)
        if m and worst is not None and len(worst) == 2:
            assert worst[axis] in _numbers(m.group(1)), (hint, worst)
    m = re.search(r"\bat ind(?:ex|ices) ([\d, ]+(?: and \d+| to \d+)?)(?! of axis)\b", hint)
    if m and worst is not None and len(worst) == 1:
        assert worst[0] in _numbers(m.group(1)), (hint, worst)
    if "expected_at_worst" in diag and "actual_at_worst" in diag:
        e, a = diag["expected_at_worst"], diag["actual_at_worst"]
        if "larger than the expected value" in hint:
            assert a > e, hint
        if "smaller than the expected value" in hint:
            assert a < e, hint
        if "yours is False" in hint:
            assert a is False, hint
        if "yours is True" in hint:
            assert a is True, hint


def _check_kind_hint(t: TestResult, tests: list[TestResult]) -> None:
    """The kind hint is about what the failure shows."""
    kind, hint, message = t.kind, t.kind_hint, t.message
    assert not any(g in hint for g in GUESSES), hint
    if kind == "nan":
        assert "NaN" in message, message
    elif kind == "inf":
        assert "infinite" in message, message
    elif kind == "shape":
        assert "shape" in message.lower(), message
    elif kind == "dtype":
        assert "dtype" in message, message
    elif kind == "precision":
        rel = (t.diagnostics or {}).get("max_rel_error")
        assert "outside the tolerance" in message and (rel is None or rel <= 1e-3), message
    elif kind == "raised":
        assert t.status == "error", message
    elif kind == "not_raised":
        assert "should raise" in message and "but it raised" not in message, message
    elif kind == "wrong_exception":
        assert "should raise" in message and "but it raised" in message, message
    elif kind == "large":
        m = re.search(r"Right on the (\d+) smaller tests", hint)
        assert m and sum(x.passed for x in tests) >= int(m.group(1)), hint
    elif kind == "values":
        assert "differ" in message or "outside the tolerance" in message, message
        _check_observations(t)


CASES = [(slug, v.name) for slug, variants in CORPUS.items() for v in variants]


def test_every_exercise_has_three_uncatalogued_variants():
    assert set(CORPUS) == set(catalog.load())
    for slug, variants in CORPUS.items():
        assert len(variants) >= 3, slug
        assert len({v.name for v in variants}) == len(variants)
        for v in variants:  # each edit applies, and makes a different file
            assert _variant_source(slug, v) != catalog.get(slug).solution.read_text()


@pytest.mark.parametrize("slug, name", CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_feedback_names_no_cause_the_variant_does_not_have(graded, slug, name):
    tests = graded[slug, name]
    variant = next(v for v in CORPUS[slug] if v.name == name)
    by_name = {t.name: t for t in tests}
    for test, kind in variant.expect.items():
        assert not by_name[test].passed and by_name[test].kind == kind, (
            test, by_name[test].status, by_name[test].kind, by_name[test].message)
    markers = _markers(slug)
    for t in tests:
        if t.passed:
            assert t.hint == "" and t.kind_hint == "" and t.mistake is None
            continue
        assert "grader error" not in t.message, t.message
        # no known mistake: none of these variants is one
        assert t.mistake is None and t.mistake_message == "" and t.kind != "known_mistake", (
            t.name, t.mistake)
        # the test's own hint: shown exactly where the failure is of a kind it is about
        marker = markers[t.name]
        hint_for = set(marker["hint_for"])
        kinds = _kinds(t)
        if t.hint:
            assert t.hint == marker["hint"]
            assert kinds & hint_for or ("large" in hint_for and "large" in kinds), (
                t.name, kinds, hint_for)
        else:
            assert not (kinds & hint_for), (t.name, kinds, hint_for, t.message)
        if t.kind_hint:
            _check_kind_hint(t, tests)


def test_the_corpus_covers_the_kinds_of_failure(graded):
    """The corpus is worth its time: it meets most kinds of failure, and shows test hints
    both given and withheld."""
    failed = [t for tests in graded.values() for t in tests if not t.passed]
    kinds = {k for t in failed for k in _kinds(t)}
    assert kinds >= {"values", "shape", "nan", "inf", "precision", "type", "raised",
                     "not_raised"}, kinds
    assert any(t.hint for t in failed)
    assert any(not t.hint and t.kind_hint for t in failed)
    # observations with a place, and an exercise's region, were made
    hints = " ".join(t.kind_hint for t in failed)
    assert re.search(r"All \d+ wrong values are in (rows?|columns?) \d", hints), hints
    assert "neighbours only if the grid wraps around its edges" in hints


if __name__ == "__main__":  # the corpus's feedback, to read: python tests/test_feedback_corpus.py
    import tempfile

    for (slug, name), tests in grade_corpus(Path(tempfile.mkdtemp())).items():
        print(f"== {slug} / {name}")
        for t in tests:
            if not t.passed:
                print(f"  - {t.name} [{t.status}, {t.kind}] {t.message[:150]}")
                for label, text in (("kind", t.kind_hint), ("hint", t.hint)):
                    if text:
                        print(f"      {label}: {text}")
