"""Exercise: compute_frontier — how much compute does a ViT need to match a ResNet?

Read compute_frontier.md, then replace the bodies below. Grade with: grade compute_frontier
"""

import numpy as np

# Dosovitskiy et al. (2021), "An Image is Worth 16x16 Words", Table 6: models pre-trained on
# JFT-300M, as (name, pre-training compute in exaFLOPs, ImageNet top-1 % after fine-tuning).
# "(14 ep)" marks the models pre-trained for 14 epochs; all others were pre-trained for 7.
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


def pareto_frontier(compute, accuracy):
    """Indices of the compute frontier: the models more accurate than every cheaper model.

    ``compute`` and ``accuracy`` are equal-length 1-D sequences of numbers (model ``i`` costs
    ``compute[i]`` and scores ``accuracy[i]``). Model ``i`` is on the frontier iff
    ``accuracy[i] > accuracy[j]`` for every model ``j`` with ``compute[j] < compute[i]``
    (strictly cheaper; the cheapest model is always on it).

    Returns a ``list[int]`` of those indices ordered by increasing compute. Models of equal
    compute are not cheaper than one another: each is judged against the strictly cheaper
    models only, and equal-compute frontier models are listed by increasing accuracy, then by
    increasing index.

    Raises ``ValueError`` when the lengths differ, when there is no model, when a compute is
    not finite or not > 0, or when an accuracy is not finite.
    """
    raise NotImplementedError


def compute_to_match(target_accuracy, compute, accuracy):
    """The compute a frontier model would need to reach ``target_accuracy`` (a float).

    The frontier is ``pareto_frontier(compute, accuracy)``. Between two adjacent frontier models
    ``(c0, a0)`` and ``(c1, a1)`` with ``a0 <= target <= a1``, ``log(compute)`` is linear in
    accuracy: ``exp(log c0 + (target - a0) / (a1 - a0) * (log c1 - log c0))``. At a frontier
    model's accuracy the result is exactly that model's compute. Returns ``nan`` when the target
    is below the cheapest frontier model's accuracy or above the best one's (no extrapolation),
    and for a NaN target.

    Raises ``ValueError`` for invalid ``compute``/``accuracy``, as ``pareto_frontier`` does.
    """
    raise NotImplementedError
