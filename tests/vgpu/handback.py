#!/usr/bin/env python3
"""How long after each request's end a latency slice handed its turn over (test_latency.sh, case
handback): REQUESTS is the probe's PROBE_TIMELINE ("q FIRST START_NS LATENCY_NS RUN_NS"), LOG its
log at level 4 ("turn NS hand over: ..."; CLOCK_MONOTONIC, as the requests). For each request the
first hand-over after its end, if within 5 ms (a request whose turn was cut, or that was followed
by its next one, has none); prints "MEDIAN us (N of M requests, p90 P90 us)", or nothing when
fewer than 20 requests had one."""
import bisect
import re
import sys


def main(requests, log):
    ends = []
    with open(requests) as f:
        for line in f:
            w = line.split()
            if len(w) >= 4 and w[0] == "q":
                ends.append(int(w[2]) + int(w[3]))
    with open(log, errors="replace") as f:
        backs = sorted(int(m.group(1)) for m in re.finditer(r"turn (\d+) hand over: ", f.read()))
    after = []
    for end in ends:
        i = bisect.bisect_left(backs, end)
        if i < len(backs) and backs[i] - end <= 5_000_000:
            after.append((backs[i] - end) / 1000)
    if len(after) < 20:
        return
    after.sort()
    print(f"{after[len(after) // 2]:.0f} us ({len(after)} of {len(ends)} requests, p90 {after[len(after) * 9 // 10]:.0f} us)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
