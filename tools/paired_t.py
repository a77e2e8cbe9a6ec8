"""The 95 % t-interval of the mean of paired differences (one per seed), standard library only.

Used by tools/pilot_smollm2.py and tools/trl_side_by_side/{run,smollm2}.py.
"""
import math
import statistics

# Two-sided 95 % quantiles t(0.975, df) of Student's t by degrees of freedom (standard tables;
# scipy.stats.t.ppf(0.975, df) gives the same to 3 decimals).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228}


def half_width(diffs: list[float]) -> float:
    """Half the 95 % t-interval of mean(diffs), for at least 2 differences; beyond the table
    (more than 11), the normal quantile 1.96."""
    df = len(diffs) - 1
    return T975.get(df, 1.96) * statistics.stdev(diffs) / math.sqrt(len(diffs))
