#!/usr/bin/env python3
"""Where equal latency clients' requests waited, from their kernels' GPU times (bench/latency.sh's
equal shapes with LAT_TIMELINE_DIR): latency_equal.py CLIENT.txt...

Each file is one client's LAT_TIMELINE ("k START_NS END_NS" per kernel, one clock for every
process on the GPU: %globaltimer; "r FIRST_KERNEL LATENCY_NS" per request), or on the simulated
GPU its FAKEGPU_KERNEL_LOG (the same k lines, CLOCK_MONOTONIC) and compute-probe's PROBE_TIMELINE
("q FIRST START_NS LATENCY_NS RUN_NS" per request) in one file. Prints:
  all:  the GPU's busy fraction over the clients' span, how often the GPU went from one client's
        kernel to another's (changes/s), the idle gap at such a change (p10/p50/p90, us: the
        switch between contexts and the hand-over of a turn) and the time those gaps took;
  slow: for the client with the highest p99, its requests at or above its p99: how busy the GPU
        was from each one's due time (its end less its latency) to its end, and how many kernels
        of the others, in how many runs, ran meanwhile.
"""
import statistics
import sys

from latency_timeline import read  # (k, r and q lines; a kernel never stamped: None)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def main(paths):
    clients = [read(p)[:2] for p in paths]
    ev = sorted((k[0], k[1], j) for j, (ks, _) in enumerate(clients) for k in ks if k is not None)
    if len(ev) < 2:
        print("no kernels")
        return 1
    span = (ev[-1][1] - ev[0][0]) / 1e9
    busy = sum(e - s for s, e, _ in ev) / 1e9
    gaps = [(b[0] - a[1]) / 1e3 for a, b in zip(ev, ev[1:]) if a[2] != b[2] and 0 <= b[0] - a[1] < 2000000]
    print("all: busy %.2f changes/s %.0f gap_p10_us %.0f gap_p50_us %.0f gap_p90_us %.0f gaps %.2f" %
          (busy / span, len(gaps) / span, pct(gaps, .1), pct(gaps, .5), pct(gaps, .9), sum(gaps) / 1e6 / span))
    p99 = [pct([lat for _, lat in rs], .99) for _, rs in clients]
    j = max(range(len(clients)), key=lambda i: p99[i])
    ks, rs = clients[j]
    n = max(1, round(len(ks) / max(1, len(rs))))  # kernels per request
    fr, others, runs = [], [], []
    for first, lat in rs:
        if lat < p99[j] or first + n - 1 >= len(ks) or ks[first + n - 1] is None:
            continue
        end = ks[first + n - 1][1]
        due = end - lat
        win = [(s, e, c) for s, e, c in ev if e > due and s < end]
        fr.append(sum(min(e, end) - max(s, due) for s, e, _ in win) / lat)
        others.append(sum(1 for *_, c in win if c != j))
        runs.append(sum(1 for a, b in zip(win, win[1:]) if a[2] != b[2]))
    if fr:
        print("slow: client c%d p99_ms %.2f requests %d busy %.2f others_kernels %.0f runs %.0f" %
              (j + 1, p99[j] / 1e6, len(fr), statistics.mean(fr), statistics.mean(others), statistics.mean(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else 2)
