#!/bin/sh
# runc-hook.sh GPUSLICE DRIVER_ROOT [configure options...]: an OCI prestart hook (as in
# test_runc.sh's config.json) that runs `gpuslice configure` on the container being created.
#
# runc runs prestart hooks from its own (host) namespaces, with the OCI state JSON on stdin, after
# the container's mounts are made and before pivot_root: the host filesystem is still reachable in
# the container's mount namespace, where runc has bind-mounted the rootfs onto its own absolute
# path (the bundle's root.path made absolute). That is the ROOTFS gpuslice wants.
# With GS_HOOK_LOG set (hook env in config.json) it records what it saw, for the test to check.
set -eu
gs=$1 drv=$2
shift 2
state=$(cat)
pid=$(printf '%s' "$state" | jq -r .pid)
bundle=$(printf '%s' "$state" | jq -r .bundle)
root=$(jq -r .root.path "$bundle/config.json")
case $root in /*) ;; *) root=$bundle/$root ;; esac
if [ -n "${GS_HOOK_LOG:-}" ]; then
        {
                echo "pid=$pid"
                echo "bundle=$bundle"
                echo "rootfs=$root"
                echo "status=$(printf '%s' "$state" | jq -r .status)"
                # the rootfs is a mount point of the container's namespace (runc's bind mount)...
                if awk -v p="$root" '$5 == p { f = 1 } END { exit !f }' "/proc/$pid/mountinfo"; then
                        echo "rootfs_mounted=yes"
                else
                        echo "rootfs_mounted=no"
                fi
                # ... and the container has not pivoted yet: its root is still the host's
                if [ "$(stat -L -c %d:%i "/proc/$pid/root")" = "$(stat -L -c %d:%i /)" ]; then
                        echo "pivoted=no"
                else
                        echo "pivoted=yes"
                fi
        } >"$GS_HOOK_LOG"
fi
exec "$gs" --root "$drv" configure --pid "$pid" "$@" "$root"
