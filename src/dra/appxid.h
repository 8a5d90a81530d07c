/*
 * An application XID marks the share whose process caused it, not the GPU (issue 33, item 4).
 *
 * XIDs 13, 31, 43, 45, 68 and 109 are an application's doing (an illegal address, a kernel that
 * hangs): the GPU is fine and stays untainted and schedulable (kubelet/health.c ignores them). NVML's
 * event names no process; the driver's line in the kernel's log does (driver/xidlog.h: read from
 * /dev/kmsg, only records the kernel wrote, non-blocking, at most a bounded number a turn of the
 * loop). For each application XID with a pid:
 *
 *   which share   the GPU the line names (its PCI address); the slice whose process the pid is, by
 *                 the rule `gpuslice top --pids` uses (observe/collect.h: gs_obs_slices_of_host_pid:
 *                 the pid is in the slice owner's pid namespace, a slot of its region has its
 *                 innermost pid and start time); the claim is the one the slice's labels name (the
 *                 hook wrote them from the claim's CDI spec: the host's word), and the share is that
 *                 prepared claim's device on the GPU (the checkpoint). A pid that no slice's process
 *                 is (gone already, a process outside any slice), one that slices of several claims
 *                 name, or an XID without a pid changes nothing but a line in the log
 *   what it marks the claim's status.devices[] entry of that share: a condition ApplicationError,
 *                 True, reason XidN, the XID's meaning, the process's pid and name (sanitized), the
 *                 driver's words and how many XIDs its processes caused, applied as the field manager
 *                 <driver>-appxid (dra/status.h: the driver's Ready condition stays); and a Warning
 *                 Event ApplicationError on the claim. Both at once, at most once a share a minute:
 *                 the XIDs in between are counted and told at the next (a tenant that faults in a
 *                 loop floods nothing). A write the API server refuses is tried again 5 s later
 *   what it keeps the condition stays while the claim is prepared (its share works on: the process
 *                 that faulted has its error; the GPU and the other shares go on)
 *
 * Off when the plugin is not in the host's pid namespace (the kernel's pids mean nothing there),
 * and when the log cannot be opened (said once, the plugin runs on).
 */
#ifndef GS_DRA_APPXID_H
#define GS_DRA_APPXID_H

#include <gpuslice/gpuslice.h>

#include "dra/prepare.h"

struct gs_dra_appxid;

/* Follow the kernel's log at `path` for `prep`'s shares (their regions under `regions_dir`); a
 * regular file (a test's) is read every `file_period_ms`. NULL when it cannot run (said through
 * note). */
struct gs_dra_appxid *gs_dra_appxid_new(struct gs_dra_prep *prep, const char *path, const char *regions_dir,
                                        unsigned file_period_ms, void (*note)(void *ud, const char *line), void *ud);
void gs_dra_appxid_free(struct gs_dra_appxid *a);
/* The fd to poll for POLLIN (-1: none). */
int gs_dra_appxid_fd(const struct gs_dra_appxid *a);
/* Read what the log holds, mark the shares, write what is due. Returns when it wants to run again
 * (gs_now_ms() time). */
long long gs_dra_appxid_tick(struct gs_dra_appxid *a, long long now);

#endif
