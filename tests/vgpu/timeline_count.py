#!/usr/bin/env python3
"""Where a latency client's requests waited on the simulated GPU: timeline_count.py CLIENT NEIGHBOUR...

CLIENT: the client's FAKEGPU_KERNEL_LOG ("k START END" per kernel, in launch order) and compute_probe's
PROBE_TIMELINE ("q FIRST START LATENCY RUN" per request) in one file; each NEIGHBOUR: a neighbour's
kernel log (CLOCK_MONOTONIC ns, one clock for all). Per request:
  slips  neighbour kernels that began between two of its kernels (it held the GPU through its
         request: none should)
  late   neighbour kernels that began after it came and before its first kernel (launched on a
         view from before it took the GPU)
Prints one line: requests= slipped= (requests with a slip) slip_kernels= late= late_kernels=
slipped_running= (slipped requests whose thread waited for a CPU less than a tick during them:
LATENCY less RUN; a slip it does not explain) late_over1= (requests that more than one late kernel ran ahead of: beside a slice of its class a
batch keeps one kernel queued behind the one running, which may start after a request came, never
two) p50_us= p99_us= max_us= (the requests' latency) worst= (the request with the most slips: its
latency in us and its slips).
"""
import bisect
import sys

TICK_NS = 250000  # the interposer's tick while launches happen (GS_LIMITER_TICK_NS)


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    mine, reqs, theirs = [], [], []
    with open(sys.argv[1]) as f:
        for line in f:
            p = line.split()
            if p and p[0] == "k" and len(p) == 3:
                mine.append((int(p[1]), int(p[2])))
            elif p and p[0] == "q" and len(p) >= 4:
                reqs.append((int(p[1]), float(p[2]), float(p[3]), float(p[4]) if len(p) > 4 else float(p[3])))
    for path in sys.argv[2:]:
        with open(path) as f:
            theirs += [int(line.split()[1]) for line in f if line.startswith("k ")]
    starts = sorted(theirs)
    rows = []
    for i, (first, came, lat, run) in enumerate(reqs):
        last = reqs[i + 1][0] if i + 1 < len(reqs) else len(mine)
        ks = mine[first:last]
        if not ks:
            continue
        late = bisect.bisect_left(starts, ks[0][0]) - bisect.bisect_right(starts, came)
        slips = sum(bisect.bisect_left(starts, b[0]) - bisect.bisect_right(starts, a[1]) for a, b in zip(ks, ks[1:]))
        rows.append((lat, max(late, 0), max(slips, 0), lat - run < TICK_NS))
    if not rows:
        print("requests=0")
        return 1
    lats = sorted(r[0] for r in rows)
    worst = max(rows, key=lambda r: (r[2], r[0]))
    print(f"requests={len(rows)} slipped={sum(r[2] > 0 for r in rows)} slip_kernels={sum(r[2] for r in rows)} "
          f"slipped_running={sum(r[2] > 0 and r[3] for r in rows)} "
          f"late={sum(r[1] > 0 for r in rows)} late_kernels={sum(r[1] for r in rows)} late_over1={sum(r[1] > 1 for r in rows)} "
          f"p50_us={lats[len(lats) // 2] / 1e3:.0f} p99_us={lats[int((len(lats) - 1) * 0.99)] / 1e3:.0f} "
          f"max_us={lats[-1] / 1e3:.0f} worst={worst[0] / 1e3:.0f}/{worst[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
