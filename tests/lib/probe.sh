# Reading compute_probe's report (tests/vgpu/compute_probe.c), sourced by the scripts that run it.
#
# The simulated GPU runs a slice's kernels on the wall clock, but only kernels its process launched
# and, with the launch-ahead bounded while slices share the GPU, only about a kernel ahead: a
# process kept off its CPU loses GPU time it would have had. The probe measures the two ways it is
# kept off, over its run: cpu_wait (the share of the run it was runnable but waiting for a CPU: the
# scheduler's run_delay, /proc/self/schedstat) and steal (the share of the machine's CPU time the
# hypervisor gave to others, /proc/stat). Off-CPU moments fall on its turns as on the rest of the
# run, so they cost a slice about that share of its own GPU time: a lower bound on a fraction is
# scaled by (1 - cpu_wait - steal) of the same run. On a quiet machine both are a few hundredths
# and the bound is what it says; under load the check still judges the limiter's split and its
# upper bounds (what no stall can raise), and says what it allowed for.

# probe_field NAME FILE: the last NAME=value of FILE (a number; empty if absent)
probe_field() { sed -n "s/.*[ ^]$1=\([-0-9.]*\).*/\1/p; s/^$1=\([-0-9.]*\).*/\1/p" "$2" | tail -1; }

# probe_off FILE: cpu_wait + steal of the probe's run in FILE (0 where the kernel keeps neither)
probe_off() {
        awk -v w="$(probe_field cpu_wait "$1")" -v s="$(probe_field steal "$1")" \
                'BEGIN { o = (w > 0 ? w : 0) + (s > 0 ? s : 0); printf "%.3f\n", (o > 0.9 ? 0.9 : o) }'
}

# probe_lo LO FILE...: LO scaled by the largest off-CPU share among the FILEs' runs
probe_lo() {
        local lo=$1 f o m=0; shift
        for f in "$@"; do
                o=$(probe_off "$f")
                m=$(awk -v a="$m" -v b="$o" 'BEGIN { print (b > a ? b : a) }')
        done
        awk -v lo="$lo" -v m="$m" 'BEGIN { printf "%.3f\n", lo * (1 - m) }'
}
