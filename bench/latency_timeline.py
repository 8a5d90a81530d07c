#!/usr/bin/env python3
"""Where a latency client's requests waited: bench/latency_timeline.py CLIENT BATCH... [BOUND_MS]

CLIENT and BATCH are the LAT_TIMELINE files of bench/latency.cu processes measured together (the
GPU's %globaltimer: one clock for all), one BATCH file per batch process (a batch that comes and
goes has several; their kernels are taken together). Per request, from the client's host latency and its kernels'
GPU times (the request began about its latency before its last kernel ended):
  wait    from the request's start to its first kernel's start
  running whether a batch kernel was running when it came
  late    batch kernels that began after it came and before its first kernel (a kernel launched on a
          view from before the client took the GPU)
  slips   batch kernels that began between two of its kernels
  switch  from the end of the last batch kernel before its first kernel to that kernel's start
Prints the SMs each side's kernels ran on (and on how many both), one summary line, and with
BOUND_MS the same counts for the requests over it.
"""
import sys


def read(path):
    kernels, requests, sms = [], [], 0
    with open(path) as f:
        for line in f:
            p = line.split()
            if p[0] == "sms" and len(p) == 2:
                sms = int(p[1], 16)
            elif p[0] == "k" and len(p) == 3:
                s, e = int(p[1]), int(p[2])
                kernels.append((s, e) if s != 2**64 - 1 and e != 0 else None)
            elif p[0] == "r" and len(p) == 3:
                requests.append((int(p[1]), float(p[2])))
            elif p[0] == "q" and len(p) == 5:  # (compute-probe's request line on the simulated GPU)
                requests.append((int(p[1]), float(p[3])))
    return kernels, requests, sms


def pct(xs, q):
    xs = sorted(xs)
    return xs[int((len(xs) - 1) * q)] if xs else float("nan")


def main():
    args = sys.argv[1:]
    bound = None
    if len(args) > 2:
        try:
            bound = float(args[-1]) * 1e6
            args = args[:-1]
        except ValueError:
            pass
    if len(args) < 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    ck, reqs, csms = read(args[0])
    bk_all, bsms = [], 0
    for path in args[1:]:
        k, _, m = read(path)
        bk_all += k
        bsms |= m
    bk = sorted(k for k in bk_all if k is not None)
    starts = [s for s, _ in bk]
    import bisect

    rows = []
    for i, (first, lat) in enumerate(reqs):
        last = reqs[i + 1][0] if i + 1 < len(reqs) else len(ck)
        mine = [ck[j] for j in range(first, min(last, len(ck))) if ck[j] is not None]
        if not mine or len(mine) != last - first:
            continue
        came = mine[-1][1] - lat
        c1 = mine[0][0]
        lo, hi = bisect.bisect_right(starts, came), bisect.bisect_left(starts, c1)
        late = hi - lo
        j = bisect.bisect_right(starts, came) - 1
        running = j >= 0 and bk[j][1] > came
        slips = 0
        for a, b in zip(mine, mine[1:]):
            slips += bisect.bisect_left(starts, b[0]) - bisect.bisect_right(starts, a[1])
        ends = [e for s, e in bk[max(0, hi - 3):hi] if e <= c1]
        switch = c1 - max(ends) if ends else None
        rows.append(dict(lat=lat, wait=c1 - came, running=running, late=late, slips=slips, switch=switch))

    def summary(name, rs):
        if not rs:
            print(f"{name}: none")
            return
        sw = [r["switch"] for r in rs if r["switch"] is not None and r["running"]]
        print(f"{name}: requests={len(rs)} p50_ms={pct([r['lat'] for r in rs], .5) / 1e6:.3f} "
              f"p99_ms={pct([r['lat'] for r in rs], .99) / 1e6:.3f} "
              f"wait_p50_ms={pct([r['wait'] for r in rs], .5) / 1e6:.3f} wait_p99_ms={pct([r['wait'] for r in rs], .99) / 1e6:.3f} "
              f"running={sum(r['running'] for r in rs)} late={sum(r['late'] > 0 for r in rs)} "
              f"late_kernels={sum(r['late'] for r in rs)} slipped={sum(r['slips'] > 0 for r in rs)} "
              f"slip_kernels={sum(r['slips'] for r in rs)} "
              f"switch_p50_us={pct(sw, .5) / 1e3:.1f} switch_p99_us={pct(sw, .99) / 1e3:.1f}")

    print(f"sms: client {bin(csms).count('1')} batch {bin(bsms).count('1')} both {bin(csms & bsms).count('1')}")
    summary("all", rows)
    if bound is not None:
        summary(f"over {bound / 1e6:.3f} ms", [r for r in rows if r["lat"] > bound])
    return 0


if __name__ == "__main__":
    sys.exit(main())
