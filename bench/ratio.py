"""What alternated rounds say about a ratio goal ("dbscope >= 1.00x the peer"), for the bench
scripts: each round pairs dbscope with the peer run next to it, so the round's own ratio cancels
what the machine was doing then; the rounds' ratios are then summed up without assuming a
distribution (this VM's rounds swing by 30 % and are not normal):

- the median of the rounds' ratios and its distribution-free 95 % confidence interval from order
  statistics (the interval [r(k), r(n-k+1)] of the sorted ratios, with k the largest for which
  P(B <= k-1) <= 0.025, B ~ Binomial(n, 1/2): the textbook order-statistic interval for a
  median, whose coverage 1 - 2 P(B <= k-1) is at least 95 %);
- the two-sided sign test of "the median ratio is 1" (R: `binom.test(wins, n)`, ties at exactly 1
  left out);
- a verdict: "at least 1.00" only when the whole interval is at or above 1.00, "below 1.00" when
  it is all below, else "not told apart from 1.00 in n rounds".

`goal_lines(label, ours, theirs, higher_is_better=True)` returns the lines to print. For a cost
(CPU per transaction: the goal is <= 1.00) pass `higher_is_better=False`.
Run as a script it checks itself: `python3 bench/ratio.py`.
"""

from math import comb
from statistics import median


def _binom_cdf(k, n):
    """P(B <= k) for B ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    return sum(comb(n, i) for i in range(0, min(k, n) + 1)) / 2**n


def median_ci(values, level=0.95):
    """The distribution-free interval for the median and its exact coverage, or None when n is too
    small for any interval to reach `level` (n < 6 at 95 %)."""
    v = sorted(values)
    n = len(v)
    alpha = 1 - level
    k = 0
    while _binom_cdf(k, n) <= alpha / 2:
        k += 1
    # k is now the first count whose tail exceeds alpha/2: the interval is [v(k), v(n-k+1)]
    # (1-based), which needs k >= 1.
    if k == 0:
        return None
    coverage = 1 - 2 * _binom_cdf(k - 1, n)
    return v[k - 1], v[n - k], coverage


def sign_test(values, centre=1.0):
    """Two-sided exact sign test of median == centre: (above, n without ties, p)."""
    above = sum(1 for x in values if x > centre)
    below = sum(1 for x in values if x < centre)
    n = above + below
    if n == 0:
        return above, 0, 1.0
    s = min(above, below)
    return above, n, min(1.0, 2 * _binom_cdf(s, n))


def goal_lines(label, ours, theirs, higher_is_better=True):
    """The lines that say what the rounds show about `label` (ours / theirs) against 1.00."""
    ratios = [a / b for a, b in zip(ours, theirs)]
    n = len(ratios)
    if n == 0:
        return [f"{label}: no rounds"]
    goal = ">= 1.00" if higher_is_better else "<= 1.00"
    out = [
        f"{label}: ratio of medians {median(ours) / median(theirs):.3f}, median of the "
        f"{n} rounds' ratios {median(ratios):.3f} (goal {goal}); rounds "
        + " ".join(f"{r:.2f}" for r in ratios)
    ]
    above, m, p = sign_test(ratios)
    ci = median_ci(ratios)
    if ci is None:
        out.append(f"  {n} rounds are too few for a 95 % interval (6 at least); sign test: "
                   f"{above} of {m} above 1.00, p = {p:.3f}")
        return out
    lo, hi, coverage = ci
    if lo >= 1.0:
        said = "at least 1.00" if higher_is_better else "above 1.00: goal missed"
    elif hi < 1.0:
        said = "below 1.00: goal missed" if higher_is_better else "below 1.00"
    else:
        said = f"not told apart from 1.00 in {n} rounds"
    out.append(f"  median ratio's interval [{lo:.3f}, {hi:.3f}] ({coverage * 100:.1f} % "
               f"distribution-free); sign test {above} of {m} above 1.00, p = {p:.3f}: {said}")
    return out


if __name__ == "__main__":
    # Checks against values worked out by hand and by R 4.2.2 (the R call that gives each is in its
    # comment; run with Rscript -e on 2026-12-07).
    # binom.test(3, 16)$p.value = 0.02127075
    assert abs(sign_test([1.1] * 3 + [0.9] * 13)[2] - 0.02127075) < 1e-8
    # binom.test(8, 16)$p.value = 1
    assert sign_test([1.1] * 8 + [0.9] * 8)[2] == 1.0
    # n = 16: P(B <= 3) = 697/65536, P(B <= 4) = 2517/65536 > 0.025, so k = 4: [r(4), r(13)],
    # coverage 1 - 2 * 697/65536: 1 - 2 * pbinom(3, 16, 0.5) = 0.978729248.
    lo, hi, cov = median_ci([float(i) for i in range(1, 17)])
    assert (lo, hi) == (4.0, 13.0) and abs(cov - (1 - 2 * 697 / 65536)) < 1e-12
    # n = 6: k = 1 (P(B <= 0) = 1/64 <= 0.025 < P(B <= 1) = 7/64): the whole range, 96.9 %.
    lo, hi, cov = median_ci([3.0, 1.0, 2.0, 6.0, 5.0, 4.0])
    assert (lo, hi) == (1.0, 6.0) and abs(cov - (1 - 2 / 64)) < 1e-12
    # n = 5: no 95 % interval (pbinom(0, 5, 0.5) = 0.03125 > 0.025).
    assert median_ci([1.0, 2.0, 3.0, 4.0, 5.0]) is None
    # The interval always holds the median, and both ends are rounds' values.
    import random
    rng = random.Random(7)
    for n in range(6, 60):
        v = [rng.lognormvariate(0, 0.2) for _ in range(n)]
        lo, hi, cov = median_ci(v)
        assert lo <= median(v) <= hi and lo in v and hi in v and cov >= 0.95
    lines = goal_lines("x", [1.2] * 10, [1.0] * 10)
    assert lines[1].endswith("at least 1.00"), lines
    lines = goal_lines("x", [0.8, 1.3, 0.9, 1.1, 1.0, 1.2, 0.95, 1.05], [1.0] * 8)
    assert "not told apart" in lines[1], lines
    lines = goal_lines("cpu", [1.1] * 8, [1.0] * 8, higher_is_better=False)
    assert lines[1].endswith("goal missed"), lines
    print("bench/ratio.py: checks passed")
