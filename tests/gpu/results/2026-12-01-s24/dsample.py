#!/usr/bin/env python3
# Sample the threads of processes named NAMES: log each thread's episodes in state D (waiting in
# the kernel, uninterruptibly) with its kernel stack, and any jump of its run delay (time runnable
# but not running, from schedstat) over 2 ms between samples. On a D episode outside the NVIDIA
# driver, dump every watched thread's state, syscall and stack once (to find a lock's holder).
# Timestamps: CLOCK_MONOTONIC ns, as the turn logs.
import os, sys, time
out = open(sys.argv[1], 'w', buffering=1 << 16)
names = set(sys.argv[2].split(','))
dur = float(sys.argv[3])
def rd(p):
    try:
        with open(p) as f: return f.read()
    except Exception: return ''
def threads(pids):
    """(pid, tid, state) of every thread of `pids` still there"""
    for p in pids:
        try: tids = os.listdir(f'/proc/{p}/task')
        except Exception: continue
        for t in tids:
            st = rd(f'/proc/{p}/task/{t}/stat')
            if st:
                yield p, t, st[st.rindex(')') + 2]
t_end = time.monotonic() + dur
pids, pid_at = [], 0.0
indep, delay = {}, {}
nsamp = dumps = 0
while time.monotonic() < t_end:
    now = time.monotonic()
    if now - pid_at > 0.05:
        pid_at = now
        pids = [p for p in os.listdir('/proc') if p.isdigit() and rd(f'/proc/{p}/comm').strip() in names]
    nsamp += 1
    ts = time.monotonic_ns()
    seen, dump = set(), False
    for p, t, state in threads(pids):
        ss = rd(f'/proc/{p}/task/{t}/schedstat').split()
        if len(ss) >= 2:
            d = int(ss[1])
            if t in delay and d - delay[t] > 2000000:
                out.write(f'{ts} rundelay {p} {t} {(d - delay[t]) / 1e6:.3f}\n')
            delay[t] = d
        if state == 'D':
            seen.add(t)
            if t not in indep:
                indep[t] = ts
                stk = rd(f'/proc/{p}/task/{t}/stack').replace('\n', ' | ')
                sc = rd(f'/proc/{p}/task/{t}/syscall').split(' ')[0]
                extra = ''
                if 'expand_files' in stk:
                    fs = [l for l in rd(f'/proc/{p}/status').split('\n') if l.startswith('FDSize')]
                    try: nfd = len(os.listdir(f'/proc/{p}/fd'))
                    except Exception: nfd = -1
                    extra = f' [{fs[0] if fs else "?"} open {nfd}]'
                out.write(f'{ts} D {p} {t} sc {sc}{extra} {stk}\n')
                if 'nv' not in stk and 'uvm' not in stk:
                    dump = True
    for t in list(indep):
        if t not in seen:
            out.write(f'{ts} end {t} {(ts - indep[t]) / 1e6:.3f}\n')
            del indep[t]
    if dump and dumps < 300:
        dumps += 1
        out.write(f'== {ts} dump\n')
        for p, t, state in threads(pids):
            if state != 'S':
                sc = rd(f'/proc/{p}/task/{t}/syscall').split(' ')[0]
                stk = rd(f'/proc/{p}/task/{t}/stack').replace('\n', ' | ')
                out.write(f'  {p} {t} {state} sc {sc} {stk}\n')
    time.sleep(0.0005)
out.write(f'samples {nsamp} dumps {dumps}\n')
