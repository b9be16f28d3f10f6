"""Reference solution: the compute frontier of the ViT paper's scaling study (its Table 6)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# Dosovitskiy et al. (2021), Table 6: models pre-trained on JFT-300M, as
# (name, pre-training exaFLOPs, ImageNet top-1 % after fine-tuning). "(14 ep)" marks the
# models pre-trained for 14 epochs; all others for 7.
TABLE6 = [
    ("ViT-B/32", 55.0, 80.73),
    ("ViT-B/16", 224.0, 84.15),
    ("ViT-L/32", 196.0, 84.37),
    ("ViT-L/16", 783.0, 86.30),
    ("ViT-L/16 (14 ep)", 1567.0, 87.12),
    ("ViT-H/14 (14 ep)", 4262.0, 88.08),
    ("ResNet50x1", 50.0, 77.54),
    ("ResNet50x2", 199.0, 82.12),
    ("ResNet101x1", 96.0, 80.67),
    ("ResNet152x1", 141.0, 81.88),
    ("ResNet152x2", 563.0, 84.97),
    ("ResNet152x2 (14 ep)", 1126.0, 85.56),
    ("ResNet200x3 (14 ep)", 3306.0, 87.22),
    ("R50x1+ViT-B/32", 106.0, 84.90),
    ("R50x1+ViT-B/16", 274.0, 85.58),
    ("R50x1+ViT-L/32", 246.0, 85.68),
    ("R50x1+ViT-L/16", 859.0, 86.60),
    ("R50x1+ViT-L/16 (14 ep)", 1668.0, 87.12),
]


def _validate(compute: Sequence[float], accuracy: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(compute, dtype=np.float64)
    a = np.asarray(accuracy, dtype=np.float64)
    if c.ndim != 1 or a.ndim != 1 or c.shape != a.shape:
        raise ValueError(f"compute and accuracy must be 1-D of equal length, got shapes "
                         f"{c.shape} and {a.shape}")
    if c.size == 0:
        raise ValueError("at least one model is needed")
    if not (np.all(np.isfinite(c)) and np.all(c > 0)):
        raise ValueError("compute must be finite and > 0 (its logarithm is interpolated)")
    if not np.all(np.isfinite(a)):
        raise ValueError("accuracy must be finite")
    return c, a


def pareto_frontier(compute: Sequence[float], accuracy: Sequence[float]) -> list[int]:
    """Indices, by increasing compute, of the models more accurate than every strictly cheaper one.

    Models with equal compute are not cheaper than one another: each is judged against the
    strictly cheaper models only, and equal-compute frontier models are listed by increasing
    accuracy, then by index.
    """
    c, a = _validate(compute, accuracy)
    order = np.lexsort((np.arange(c.size), a, c))         # by compute, then accuracy, then index
    c_sorted, a_sorted = c[order], a[order]
    best_so_far = np.maximum.accumulate(a_sorted)
    # The best accuracy among strictly cheaper models: the running maximum just before the
    # first model of each equal-compute group (-inf for the cheapest group).
    group_start = np.searchsorted(c_sorted, c_sorted, side="left")
    best_cheaper = np.where(group_start > 0, best_so_far[np.maximum(group_start - 1, 0)], -np.inf)
    return order[a_sorted > best_cheaper].tolist()


def compute_to_match(target_accuracy: float, compute: Sequence[float],
                     accuracy: Sequence[float]) -> float:
    """Frontier compute for ``target_accuracy``: log(compute) linear in accuracy between the two
    adjacent frontier models that bracket it; nan outside the frontier's accuracy range."""
    c, a = _validate(compute, accuracy)
    front = pareto_frontier(c, a)
    fc, fa = c[front], a[front]
    t = float(target_accuracy)
    if not fa[0] <= t <= fa[-1]:                          # a NaN target lands here too
        return math.nan
    hit = np.flatnonzero(fa == t)
    if hit.size:
        return float(fc[hit[0]])
    j = int(np.searchsorted(fa, t))                       # fa[j - 1] < t < fa[j]
    w = (t - fa[j - 1]) / (fa[j] - fa[j - 1])
    return float(np.exp((1.0 - w) * np.log(fc[j - 1]) + w * np.log(fc[j])))
