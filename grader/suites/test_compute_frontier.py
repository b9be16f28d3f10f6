"""Hidden suite: compute_frontier."""

import math

import numpy as np

from grader.suite import graded, mistake, probes, reference

PF = "pareto_frontier"
CM = "compute_to_match"


def _table6(prefix=""):
    """(compute, accuracy) lists of the Table 6 rows whose name starts with ``prefix``."""
    rows = [r for r in reference("compute_frontier").TABLE6 if r[0].startswith(prefix)]
    return [r[1] for r in rows], [r[2] for r in rows]


def _frontier(compute, accuracy, *, strict=True, running=True, groups=True):
    """The reference frontier, or a wrong variant of it (for the known mistakes)."""
    c = np.asarray(compute, dtype=float)
    a = np.asarray(accuracy, dtype=float)
    if groups:
        order = np.lexsort((np.arange(c.size), a, c))
    else:
        order = np.argsort(c, kind="stable")
    cs, acc = c[order], a[order]
    best = np.maximum.accumulate(acc) if running else acc
    start = np.searchsorted(cs, cs, side="left") if groups else np.arange(c.size)
    cheaper = np.where(start > 0, best[np.maximum(start - 1, 0)], -np.inf)
    keep = acc > cheaper if strict else acc >= cheaper
    return order[keep].tolist()


def _match(target, compute, accuracy, *, front=None, log=True, outside="nan"):
    """compute_to_match on the points ``front`` (default: the frontier), or a wrong variant."""
    c = np.asarray(compute, dtype=float)
    a = np.asarray(accuracy, dtype=float)
    front = _frontier(c, a) if front is None else front
    fc, fa = c[front], a[front]
    t = float(target)
    if not fa[0] <= t <= fa[-1]:
        if outside == "clamp" and not math.isnan(t):
            return float(fc[0] if t < fa[0] else fc[-1])
        return math.nan
    hit = np.flatnonzero(fa == t)
    if hit.size:
        return float(fc[hit[0]])
    j = int(np.searchsorted(fa, t))
    w = (t - fa[j - 1]) / (fa[j] - fa[j - 1])
    if log:
        return float(np.exp((1 - w) * np.log(fc[j - 1]) + w * np.log(fc[j])))
    return float((1 - w) * fc[j - 1] + w * fc[j])


# -- known mistakes: pareto_frontier ------------------------------------------------------------

@mistake(PF, "input_order",
         "Your indices match the frontier listed in input order. The contract lists the "
         "frontier by increasing compute: sort by compute, not by index.")
def _input_order(compute, accuracy):
    return sorted(_frontier(compute, accuracy))


@mistake(PF, "beats_previous_only",
         "Your frontier matches one where a model only has to beat the next cheaper model. "
         "A frontier model must beat EVERY cheaper model: compare with the running maximum of "
         "the accuracies so far, not with the previous one.")
def _beats_previous_only(compute, accuracy):
    return _frontier(compute, accuracy, running=False)


@mistake(PF, "ties_in_accuracy_kept",
         "Your frontier matches one that keeps a model as accurate as a cheaper one (>= "
         "instead of >). Paying more for the same accuracy is not progress: a frontier model "
         "must be strictly more accurate than every cheaper model.")
def _ties_kept(compute, accuracy):
    return _frontier(compute, accuracy, strict=False)


@mistake(PF, "equal_compute_compared",
         "Your frontier matches a scan in input order that compares models of equal compute "
         "with each other. 'Cheaper' means strictly cheaper: models of equal compute are judged "
         "only against strictly cheaper models, and listed by increasing accuracy.")
def _equal_compute_compared(compute, accuracy):
    return _frontier(compute, accuracy, groups=False)


# -- known mistakes: compute_to_match ------------------------------------------------------------

@mistake(CM, "linear_in_compute",
         "Your value matches interpolating compute itself linearly in accuracy. Compute grows "
         "by factors, so the contract interpolates log(compute): halfway in accuracy is the "
         "geometric mean of the two computes, not their average.")
def _linear_in_compute(target_accuracy, compute, accuracy):
    return _match(target_accuracy, compute, accuracy, log=False)


@mistake(CM, "all_models_not_frontier",
         "Your value matches interpolating between all models sorted by accuracy. Only "
         "frontier models count: a model that is beaten by a cheaper one says nothing about the "
         "compute needed for its accuracy.")
def _all_models(target_accuracy, compute, accuracy):
    a = np.asarray(accuracy, dtype=float)
    return _match(target_accuracy, compute, accuracy,
                  front=np.argsort(a, kind="stable").tolist())


@mistake(CM, "clamps_outside_range",
         "Your value matches clamping to the cheapest or the best frontier model outside the "
         "frontier's accuracy range (what np.interp does by default). No frontier model "
         "brackets such a target: return nan.")
def _clamps(target_accuracy, compute, accuracy):
    return _match(target_accuracy, compute, accuracy, outside="clamp")


# A matched mistake must match again on these: scrambled rows, ties in compute and in
# accuracy, a model beaten by a cheaper one but not by its neighbour; targets inside, at a
# model and outside the frontier's range.
_PC = [5.0, 1.0, 3.0, 3.0, 8.0, 2.0, 6.0, 12.0, 7.0]
_PA = [76.0, 70.0, 75.0, 73.0, 80.0, 70.0, 72.0, 80.0, 74.0]
PROBES = probes(PF, (_PC, _PA))
MATCH_PROBES = probes(CM, (72.5, _PC, _PA), (77.0, _PC, _PA), (75.0, _PC, _PA),
                      (69.0, _PC, _PA), (85.0, _PC, _PA))


def _random_models(seed, n, tie_levels=None):
    """Seeded models: accuracy grows with log10(compute), plus noise; accuracies rounded to 0.01."""
    rng = np.random.default_rng(seed)
    if tie_levels is None:
        logc = rng.uniform(1.0, 4.0, n)
    else:
        logc = rng.choice(np.linspace(1.0, 4.0, tie_levels), n)
    compute = np.round(10.0 ** logc, 3)
    accuracy = np.round(70.0 + 5.0 * logc + rng.normal(0.0, 2.0, n), 2)
    return compute, accuracy


# -- pareto_frontier -----------------------------------------------------------------------------

@graded(1, "Sort the ViTs by compute and keep one when it beats every cheaper ViT. Which ViT "
           "costs more than a cheaper one and is still less accurate?", visibility="public",
        hint_for=("values", "shape"))
def test_frontier_table6_vits(check):
    """The ViT rows of Table 6: ViT-B/16 costs more than ViT-L/32 and is less accurate."""
    check.call(PF, *_table6("ViT"))


@graded(1, "List the frontier in increasing compute, whatever the order of the input rows.",
        hint_for=("values", "shape"))
def test_frontier_table6_all_models(check):
    """All 18 rows of Table 6 (ViTs, ResNets and hybrids) together."""
    check.call(PF, *_table6())


@graded(1, "Compare each model with the best accuracy among ALL cheaper models, not with its "
           "neighbour in the sorted order.",
        hint_for=("values", "shape"))
def test_frontier_shuffled_rows(check):
    """A hand-made set given in scrambled order; a model beats its neighbour but not all."""
    compute = [300.0, 10.0, 50.0, 20.0, 1000.0, 40.0, 500.0]
    accuracy = [83.0, 70.0, 77.0, 80.0, 88.0, 75.0, 81.0]
    check.call(PF, compute, accuracy)


@graded(1, "A model exactly as accurate as a cheaper one is not 'higher than' it.",
        hint_for=("values", "shape"))
def test_frontier_ties_in_accuracy(check):
    """Equal accuracies at higher compute are not on the frontier."""
    check.call(PF, [10.0, 20.0, 40.0, 80.0], [70.0, 70.0, 75.0, 75.0])


@graded(1, "Read the contract on equal compute: a model is judged only against STRICTLY "
           "cheaper models, so models of equal compute do not compete with each other.",
        hint_for=("values", "shape"))
def test_frontier_ties_in_compute(check):
    """Models of equal compute: each is judged against strictly cheaper models only."""
    check.call(PF, [1.0, 1.0, 2.0, 2.0], [75.0, 70.0, 82.0, 80.0])
    check.call(PF, [5.0, 5.0, 9.0], [60.0, 60.0, 61.0])


@graded(1, "One model is its own frontier.",
        hint_for=("values", "shape", "raised", "type"))
def test_frontier_single_model(check):
    """A single model; two models that trade compute for accuracy are both on it."""
    check.call(PF, [123.0], [50.0])
    check.call(PF, [123.0, 50.0], [50.0, 40.0])


@graded(1, "Sort once (by compute, then accuracy, then index) and take a running maximum.",
        hint_for=("values", "shape"))
def test_frontier_random(check):
    """300 seeded models, and 300 more on 12 compute levels (many ties in compute)."""
    check.call(PF, *_random_models(21, 300))
    check.call(PF, *_random_models(22, 300, tie_levels=12))


@graded(1, "Validate the inputs first and raise ValueError: the lengths must match, there "
           "must be a model, and log(compute) needs compute > 0.",
        hint_for=("not_raised", "wrong_exception"))
def test_frontier_invalid_arguments_raise(check):
    """Unequal lengths, no model, compute <= 0 or not finite, NaN accuracy raise ValueError;
    valid models still give the right frontier."""
    check.raises("ValueError", PF, [1.0, 2.0], [70.0])
    check.raises("ValueError", PF, [], [])
    check.raises("ValueError", PF, [1.0, 0.0], [70.0, 71.0])
    check.raises("ValueError", PF, [1.0, -5.0], [70.0, 71.0])
    check.raises("ValueError", PF, [1.0, math.inf], [70.0, 71.0])
    check.raises("ValueError", PF, [1.0, 2.0], [70.0, math.nan])
    check.call(PF, [1.0, 2.0, 0.5], [70.0, 71.0, 72.0])


@graded(1, "One sort and one running maximum (np.maximum.accumulate) handle 5,000 models "
           "in well under a millisecond; comparing every pair is quadratic.", timeout=30,
        hint_for=("timeout",))
def test_frontier_large(check):
    """5,000 seeded models, some sharing a compute value."""
    check.call(PF, *_random_models(23, 5000, tie_levels=2000), timed=True)


# -- compute_to_match ----------------------------------------------------------------------------

@graded(1, "At a frontier model's own accuracy no interpolation is needed.", visibility="public",
        hint_for=("values", "nan", "raised"))
def test_match_at_frontier_models(check):
    """At each frontier ViT's accuracy the answer is that ViT's compute."""
    compute, accuracy = _table6("ViT")
    for i in check.expected(PF, compute, accuracy):
        value = check.call(CM, accuracy[i], compute, accuracy)
        check.equal(value, compute[i], rtol=1e-12, atol=0.0,
                    what=f"compute_to_match at the accuracy of {compute[i]:g} exaFLOPs")


@graded(1, "Halfway in accuracy between two frontier models, log(compute) is halfway too: "
           "that is the geometric mean of their computes.",
        hint_for=("values",))
def test_match_geometric_midpoint(check):
    """Halfway in accuracy between two frontier models gives the geometric mean of computes."""
    compute, accuracy = [10.0, 1000.0], [70.0, 80.0]
    value = check.call(CM, 75.0, compute, accuracy)
    check.equal(value, 100.0, rtol=1e-9, atol=0.0, what="compute_to_match halfway")
    check.call(CM, 72.5, compute, accuracy)


@graded(2, "For each ResNet, interpolate log(compute) between the two frontier ViTs whose "
           "accuracies bracket the ResNet's accuracy.",
        hint_for=("values",))
def test_match_table6_resnets(check):
    """The statement's question: the ViT compute matching each ResNet of Table 6."""
    vit_compute, vit_accuracy = _table6("ViT")
    matches = [check.call(CM, acc, vit_compute, vit_accuracy) for acc in _table6("ResNet")[1]]
    _draw_frontier(check, matches)


def _draw_frontier(check, matches):
    """The report's curve, from the learner's own outputs: its ViT frontier and the ViT
    compute it says matches each ResNet."""
    vit_compute, vit_accuracy = _table6("ViT")
    res_compute, res_accuracy = _table6("ResNet")
    series = [{"name": "ViTs (Table 6)", "x": vit_compute, "y": vit_accuracy,
               "style": "points"}]
    front = check.optional(PF, vit_compute, vit_accuracy)
    if isinstance(front, list) and all(isinstance(i, int) and 0 <= i < len(vit_compute)
                                       for i in front):
        series.append({"name": "your ViT frontier", "x": [vit_compute[i] for i in front],
                       "y": [vit_accuracy[i] for i in front], "style": "line", "colour": 0})
    series.append({"name": "ResNets (Table 6)", "x": res_compute, "y": res_accuracy,
                   "style": "points"})
    kept = [(c, float(m), a) for c, m, a in zip(res_compute, matches, res_accuracy)
            if isinstance(m, (int, float)) and math.isfinite(m)]
    if kept:
        series.append({"name": "ResNet -> your ViT compute of the same accuracy",
                       "x": [v for c, m, _ in kept for v in (c, m)],
                       "y": [a for _, _, a in kept for _ in (0, 1)], "style": "pairs"})
    check.curve("The compute frontier: ViTs against ResNets", series,
                x_label="pre-training compute (exaFLOPs)", y_label="ImageNet top-1 (%)",
                log_x=True,
                note="A ResNet to the right of its match costs more compute than a frontier "
                     "ViT of the same accuracy. ResNets below the cheapest frontier ViT have "
                     "no match (nan).")


@graded(1, "A ViT beaten by a cheaper ViT is not on the frontier: skip it when you look for "
           "the bracketing pair.",
        hint_for=("values",))
def test_match_skips_models_off_the_frontier(check):
    """A target between two frontier ViTs, next to the off-frontier ViT-B/16."""
    compute, accuracy = _table6("ViT")
    check.call(CM, 84.0, compute, accuracy)
    check.call(CM, 84.2, compute, accuracy)


@graded(1, "Outside the frontier's accuracy range nothing brackets the target: do not "
           "extrapolate and do not clamp.",
        hint_for=("nan", "raised"))
def test_match_outside_range_is_nan(check):
    """Targets below the cheapest or above the best frontier model give nan; the ends do not."""
    compute, accuracy = _table6("ViT")
    for target in (77.54, 80.67, 80.73, 88.08, 88.5, 99.0):
        check.call(CM, target, compute, accuracy)


@graded(1, "Build the frontier first (by increasing compute), then search it by accuracy.",
        hint_for=("values", "nan"))
def test_match_random(check):
    """Seeded models (with ties in compute) and targets across and beyond their range."""
    compute, accuracy = _random_models(31, 200, tie_levels=40)
    rng = np.random.default_rng(32)
    for target in rng.uniform(float(accuracy.min()) - 1.0, float(accuracy.max()) + 1.0, 12):
        check.call(CM, float(target), compute, accuracy)


@graded(1, "compute_to_match uses the same inputs as pareto_frontier: validate them the "
           "same way.",
        hint_for=("not_raised", "wrong_exception"))
def test_match_invalid_arguments_raise(check):
    """Invalid compute/accuracy raise ValueError; valid ones still give the right compute."""
    check.raises("ValueError", CM, 75.0, [1.0, 2.0], [70.0])
    check.raises("ValueError", CM, 75.0, [], [])
    check.raises("ValueError", CM, 75.0, [0.0, 2.0], [70.0, 80.0])
    check.call(CM, 75.0, [1.0, 2.0], [70.0, 80.0])


@graded(1, "Reuse the vectorised frontier; the bracketing pair is one np.searchsorted away.",
        timeout=30,
        hint_for=("timeout",))
def test_match_large(check):
    """5,000 seeded models."""
    compute, accuracy = _random_models(33, 5000)
    check.call(CM, float(np.median(accuracy)) + 0.005, compute, accuracy, timed=True)
