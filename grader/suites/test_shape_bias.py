"""Hidden suite: shape_bias."""

import math

import numpy as np

from grader.suite import cached_input, graded, mistake, probes, reference

F = "shape_bias"

# The 16 categories of Geirhos et al.'s cue-conflict images.
CATEGORIES = ["airplane", "bear", "bicycle", "bird", "boat", "bottle", "car", "cat", "chair",
              "clock", "dog", "elephant", "keyboard", "knife", "oven", "truck"]

# The seed's six hand-made trials: three shape decisions, two texture decisions, and in the
# fourth trial the model names neither the shape nor the texture.
SIX_TRIALS = (
    ["cat", "clock", "bear", "boat", "oven", "truck"],        # predictions
    ["cat", "car", "bear", "dog", "knife", "truck"],          # shape labels
    ["elephant", "clock", "bottle", "bird", "oven", "keyboard"],  # texture labels
)


def _ref(*args):
    return reference(F).shape_bias(*args)


def _counts(predictions, shape_labels, texture_labels, drop_no_conflict=True):
    p, s, t = np.asarray(predictions), np.asarray(shape_labels), np.asarray(texture_labels)
    keep = s != t if drop_no_conflict else np.ones(len(p), dtype=bool)
    return int((keep & (p == s)).sum()), int((keep & (p == t)).sum()), int(keep.sum())


@mistake(F, "keeps_no_conflict",
         "Your value matches one that keeps the trials whose shape and texture labels are the "
         "same. Such an image has no cue conflict: a correct answer there is both a 'shape' "
         "and a 'texture' decision and says nothing about which cue the model used. Drop "
         "those trials first.")
def _keeps_no_conflict(predictions, shape_labels, texture_labels):
    n_shape, n_texture, _ = _counts(predictions, shape_labels, texture_labels, False)
    return n_shape / (n_shape + n_texture) if n_shape + n_texture else math.nan


@mistake(F, "divides_by_trials",
         "Your value matches shape decisions divided by the number of cue-conflict trials. "
         "Answers that name neither the shape nor the texture class do not count: divide by "
         "shape decisions + texture decisions.")
def _divides_by_trials(predictions, shape_labels, texture_labels):
    n_shape, _, n_trials = _counts(predictions, shape_labels, texture_labels)
    return n_shape / n_trials if n_trials else math.nan


@mistake(F, "texture_bias",
         "Your value matches the texture bias, texture decisions / (shape + texture "
         "decisions), which is 1 minus the shape bias. Count the answers that name the shape "
         "class in the numerator.")
def _texture_bias(predictions, shape_labels, texture_labels):
    value = _ref(predictions, shape_labels, texture_labels)
    return 1.0 - value


@mistake(F, "zero_when_empty",
         "Your value is 0 where no trial counts. With no shape or texture decision the ratio "
         "is undefined: return nan, so that 'no evidence' is not reported as 'no shape bias'.")
def _zero_when_empty(predictions, shape_labels, texture_labels):
    value = _ref(predictions, shape_labels, texture_labels)
    return 0.0 if math.isnan(value) else value


# A matched mistake must match again on these: conflict and no-conflict trials, answers of
# either cue and of neither, and trials of which none counts.
PROBES = probes(F, (["cat", "dog", "car", "bird", "oven", "clock", "boat"],
                    ["cat", "car", "car", "dog", "oven", "clock", "bear"],
                    ["dog", "dog", "bird", "bird", "knife", "clock", "cat"]),
                (["boat", "cat"], ["cat", "cat"], ["dog", "cat"]))


@cached_input
def _random_trials(seed, n, as_strings=False, p_shape=0.4, p_texture=0.35):
    """Seeded trials over the 16 categories; about 1 in 16 has no cue conflict."""
    rng = np.random.default_rng(seed)
    shape = rng.integers(0, 16, n)
    texture = rng.integers(0, 16, n)
    u = rng.random(n)
    other = rng.integers(0, 16, n)
    pred = np.where(u < p_shape, shape, np.where(u < p_shape + p_texture, texture, other))
    if as_strings:
        names = np.array(CATEGORIES)
        return [names[a].tolist() for a in (pred, shape, texture)]
    return pred, shape, texture


@graded(1, "Count the trials where the answer is the shape class and those where it is the "
           "texture class; the fourth trial is neither.", visibility="public",
        hint_for=("values",))
def test_seed_six_trials(check):
    """The seed's six trials: three shape decisions against two texture decisions give 0.60."""
    value = check.call(F, *SIX_TRIALS)
    check.equal(value, 0.6, rtol=1e-12, atol=0.0, what="shape bias of the six trials")


@graded(1, "Which trials can tell shape from texture at all? Look at the trials whose shape "
           "and texture labels are the same.", visibility="public",
        hint_for=("values",))
def test_drops_trials_without_conflict(check):
    """Trials whose shape label equals their texture label are dropped."""
    predictions = ["cat", "dog", "dog", "car", "clock", "bird"]
    shape = ["cat", "dog", "dog", "car", "truck", "bird"]
    texture = ["elephant", "dog", "dog", "oven", "clock", "bird"]
    check.call(F, predictions, shape, texture)


@graded(1, "An answer that is neither the shape class nor the texture class is not a "
           "decision for either cue: what should the denominator be?",
        hint_for=("values",))
def test_other_answers_do_not_count(check):
    """Most answers name neither cue; only shape and texture decisions enter the ratio."""
    predictions = ["boat", "cat", "knife", "knife", "car", "chair", "oven"]
    shape = ["cat", "cat", "bird", "dog", "car", "bear", "oven"]
    texture = ["clock", "bear", "bottle", "knife", "truck", "bicycle", "airplane"]
    check.call(F, predictions, shape, texture)


@graded(1, "Only shape decisions give 1.0 and only texture decisions give 0.0.",
        hint_for=("values",))
def test_extremes(check):
    """All shape decisions give 1.0; all texture decisions give 0.0."""
    pred, shape, texture = _random_trials(3, 50, p_shape=1.0, p_texture=0.0)
    check.call(F, pred, shape, texture)
    pred, shape, texture = _random_trials(4, 50, p_shape=0.0, p_texture=1.0)
    check.call(F, pred, shape, texture)


@graded(1, "When no trial counts, the ratio 0/0 is undefined. Which float says 'undefined'?",
        hint_for=("nan", "raised"))
def test_nan_when_nothing_counts(check):
    """nan when no trial counts: no conflict at all, only other answers, or no trials; one
    trial of each kind beside them counts."""
    check.call(F, ["cat", "dog"], ["cat", "dog"], ["cat", "dog"])
    check.call(F, ["boat", "oven"], ["cat", "dog"], ["bird", "car"])
    check.call(F, [], [], [])
    check.call(F, ["cat", "car", "boat"], ["cat", "dog", "bird"], ["elephant", "car", "oven"])


@graded(1, "Labels can be integers as well as strings; compare them element by element.",
        hint_for=("values", "raised"))
def test_integer_labels(check):
    """1,000 seeded trials with integer labels (numpy arrays)."""
    check.call(F, *_random_trials(11, 1000))


@graded(1, "Compare whole label arrays at once; a trial without conflict can still be "
           "answered correctly.",
        hint_for=("values",))
def test_string_labels(check):
    """500 seeded trials with the 16 category names as strings (lists)."""
    check.call(F, *_random_trials(12, 500, as_strings=True))


@graded(1, "Check the three lengths before counting and raise ValueError with a clear "
           "message.",
        hint_for=("not_raised", "wrong_exception"))
def test_unequal_lengths_raise(check):
    """Sequences of different lengths raise ValueError; equal lengths give the right ratio."""
    check.raises("ValueError", F, ["cat", "dog"], ["cat"], ["bird", "car"])
    check.raises("ValueError", F, ["cat"], ["cat"], ["bird", "car"])
    check.raises("ValueError", F, [1, 2, 3], [1, 2, 3], [4, 5])
    check.call(F, ["cat", "car", "dog"], ["cat", "dog", "dog"], ["bird", "car", "cat"])


@graded(1, "Use element-wise comparisons on whole arrays and count with sums: a million "
           "trials take milliseconds that way.",
        hint_for=("timeout",))
def test_large_input(check):
    """A million seeded trials with integer labels."""
    check.call(F, *_random_trials(13, 1_000_000), timed=True)
