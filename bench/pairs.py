"""Paired ratios of a benchmark run in rounds (bench/vgpu.sh writes the input).

Input lines: ROUND VARIANT METRIC VALUE. For each metric and each variant other than the
baseline, the ratio variant/baseline is taken within each round (the two runs were adjacent in
time), and the median of those ratios is reported with a distribution-free 95% confidence
interval (order statistics of the binomial). Pairing cancels the slow drift of GPU clocks and
host load that makes separate medians of two variants disagree by more than their real
difference.
    python3 bench/pairs.py FILE BASELINE METRIC:higher|lower[:LABEL] ...
"""
import math
import sys


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def ci(v):
    v = sorted(v)
    n = len(v)
    lo = max(0, int((n - 1.96 * math.sqrt(n)) / 2))
    return v[lo], v[n - 1 - lo]


def main():
    path, base, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    data = {}
    for line in open(path):
        parts = line.split()
        if len(parts) != 4:
            continue
        r, variant, metric, value = parts
        data.setdefault(metric, {}).setdefault(variant, {})[r] = float(value)
    print("%-36s %-10s %12s %12s %9s  %s" % ("measure", "variant", base, "variant", "ratio", "paired ratio [95% CI], rounds"))
    for spec in specs:
        metric, better = spec.split(":")[:2]
        label = spec.split(":")[2] if spec.count(":") >= 2 else metric
        by = data.get(metric, {})
        b = by.get(base, {})
        for variant, vals in sorted(by.items()):
            if variant == base:
                continue
            rounds = sorted(set(b) & set(vals))
            if not rounds:
                continue
            # "higher is better": rate ratio variant/base; "lower": time ratio variant/base.
            ratios = [vals[r] / b[r] for r in rounds]
            lo, hi = ci(ratios)
            print("%-36s %-10s %12.4g %12.4g %9.4f  %.4f [%.4f, %.4f], n=%d (%s is better)" % (
                label, variant, median([b[r] for r in rounds]), median([vals[r] for r in rounds]),
                median([vals[r] for r in rounds]) / median([b[r] for r in rounds]),
                median(ratios), lo, hi, len(rounds), better))


if __name__ == "__main__":
    main()
