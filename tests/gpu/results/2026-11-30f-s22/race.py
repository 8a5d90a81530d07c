#!/usr/bin/env python3
"""The high client's take against the batch holders' last looks (twenty-second session): race.py DIR TAG

DIR holds bench/latency.sh's LAT_TIMELINE files of one cell (TAG, e.g. coop-high-r1) run with
GPUSLICE_LOG_LEVEL=4 and the diagnostic interposer (README.md: three more trace lines, "dg gate T"
at the gate's slow path, "dg strict T0 T1 OK" around a holder's fresh look before a long kernel,
"dg launched T" after each launch; the monotonic clock, ns). Prints how long the client took from
the gate to its published take ("take: cut ..."), and the races: a batch holder's look (T0..T1)
that began before the client's take was published and whose launch came after the client reached
the gate (its kernel then ran ahead of the client's first one)."""
import bisect
import glob
import re
import sys


def parse(path):
    ev = []
    for line in open(path):
        m = re.search(r"dg (gate|launched) (\d+)", line)
        if m:
            ev.append((int(m.group(2)), m.group(1), None))
            continue
        m = re.search(r"dg strict (\d+) (\d+) (\d)", line)
        if m:
            ev.append((int(m.group(1)), "strict", (int(m.group(2)), int(m.group(3)))))
            continue
        m = re.search(r"turn (\d+) (.*) \(vtime", line)
        if m:
            ev.append((int(m.group(1)), "turn", m.group(2)))
    return ev


def main():
    d, tag = sys.argv[1], sys.argv[2]
    takes, gate = [], None
    for t, k, x in parse(f"{d}/{tag}-client.log"):
        if k == "gate":
            gate = t
        elif k == "turn" and x.startswith("take") and gate is not None:
            takes.append((gate, t))
    looks = []  # (look began, look ended, launched, batch process)
    for path in sorted(glob.glob(f"{d}/{tag}-b*.log")):
        ev = parse(path)
        for i, (t, k, x) in enumerate(ev):
            if k == "strict" and x[1] == 1:
                nxt = [e for e in ev[i + 1:i + 4] if e[1] == "launched"]
                if nxt:
                    looks.append((t, x[0], nxt[0][0], path.rsplit("-", 1)[1][:-4]))
    looks.sort()
    starts = [x[0] for x in looks]
    dl = sorted(tk - g for g, tk in takes)
    q = lambda f: dl[int(f * (len(dl) - 1))] / 1e3
    print(f"client takes {len(takes)}: gate -> take published, us: p50 {q(.5):.1f} p90 {q(.9):.1f} "
          f"p99 {q(.99):.1f} max {q(1):.1f}")
    races = []
    for g, tk in takes:
        i = bisect.bisect_left(starts, g - 200000)
        while i < len(looks) and looks[i][0] <= tk:
            if looks[i][2] > g:
                races.append((g, tk, looks[i]))
            i += 1
    print(f"races (a batch look begun before the take was published, its launch after the client's gate): {len(races)}")
    for g, tk, (t0, t1, tl, name) in races:
        print(f"  take +{(tk - g) / 1e3:.1f} us; {name} looked +{(t0 - g) / 1e3:.1f}..+{(t1 - g) / 1e3:.1f}, "
              f"launched +{(tl - g) / 1e3:.1f} (from the client's gate)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
