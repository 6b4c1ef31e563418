"""How cost grows with the number of batches: the O(N) vs O(N^2) question in two numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence

QUADRATIC_EXPONENT = 1.5


def late_early_ratio(latencies: Sequence[float], fraction: float = 0.1) -> float | None:
    """Mean of the last `fraction` of latencies over the first; ~1 when every step costs the same."""
    if len(latencies) < 2:
        return None
    n = max(1, int(len(latencies) * fraction))
    early = sum(latencies[:n]) / n
    late = sum(latencies[-n:]) / n
    return late / early if early > 0 else None


def growth_exponent(batch_counts: Sequence[int], totals: Sequence[float]) -> float:
    """Least-squares slope of log(total time) against log(batch count)."""
    if len(batch_counts) != len(totals) or len(set(batch_counts)) < 2:
        raise ValueError("need total times for at least two different batch counts")
    if min(batch_counts) <= 0 or min(totals) <= 0:
        raise ValueError("batch counts and total times must be positive")
    xs = [math.log(n) for n in batch_counts]
    ys = [math.log(t) for t in totals]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    variance = sum((x - mean_x) ** 2 for x in xs)
    return covariance / variance


def growth_class(exponent: float) -> str:
    if exponent >= QUADRATIC_EXPONENT:
        return "quadratic"
    return "linear" if exponent <= 1.2 else "superlinear"


def tail_exponent(batch_counts: Sequence[int], totals: Sequence[float]) -> float:
    """Slope between the two largest batch counts: where fixed per-batch costs matter least."""
    points = sorted(zip(batch_counts, totals, strict=True))[-2:]
    return growth_exponent([n for n, _ in points], [t for _, t in points])
