/* NUMA nodes and PCI paths of the GPUs, from sysfs (see topology.h). */
#include "kubelet/topology.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/strutil.h"

/* NVML's 00000000:3B:00.0 -> sysfs's 0000:3b:00.0 (a 16-bit domain; lower case). */
static int sysfs_bdf(const char *bus_id, char *out, size_t len)
{
        const char *colon = strchr(bus_id, ':');
        if (colon == NULL || colon - bus_id < 4 || strlen(colon) != 8)
                return -1;
        int n = snprintf(out, len, "%.4s%s", colon - 4, colon);
        if (n < 0 || (size_t)n >= len)
                return -1;
        for (char *c = out; *c != '\0'; c++)
                *c = (char)tolower((unsigned char)*c);
        return 0;
}

static int read_numa(const char *dev)
{
        char path[PATH_MAX], buf[32];
        snprintf(path, sizeof(path), "%s/numa_node", dev);
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        char *end;
        long v = strtol(buf, &end, 10);
        if (end == buf || v < 0 || v > 4096)
                return -1;
        return (int)v;
}

void gs_k8s_topology_read(struct gs_k8s_plan *plan, const char *sysfs)
{
        for (unsigned i = 0; i < plan->dev->ngpus && i < GS_MAX_GPUS; i++) {
                char bdf[32], link[PATH_MAX], real[PATH_MAX], devices[PATH_MAX];
                plan->topo.numa[i] = -1;
                plan->topo.pci[i][0] = '\0';
                if (sysfs_bdf(plan->dev->gpus[i].bus_id, bdf, sizeof(bdf)) < 0)
                        continue;
                snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", sysfs, bdf);
                snprintf(devices, sizeof(devices), "%s/devices/", sysfs);
                char rdev[PATH_MAX];
                if (realpath(devices, rdev) == NULL || realpath(link, real) == NULL) {
                        gs_log_info("topology: no %s", link);
                        continue;
                }
                size_t rl = strlen(rdev);
                if (strncmp(real, rdev, rl) == 0 && real[rl] == '/')
                        gs_strlcpy(plan->topo.pci[i], real + rl + 1, sizeof(plan->topo.pci[i]));
                plan->topo.numa[i] = read_numa(real);
                gs_log_info("topology: GPU %u %s numa %d pci %s", i, bdf, plan->topo.numa[i], plan->topo.pci[i]);
        }
}

/* Path components two PCI paths share, the GPUs' own last component excluded. */
static int common_components(const char *a, const char *b)
{
        int n = 0;
        while (*a != '\0' && *b != '\0') {
                size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
                if (la != lb || strncmp(a, b, la) != 0 || a[la] == '\0' || b[lb] == '\0')
                        break;
                n++;
                a += la + 1;
                b += lb + 1;
        }
        return n;
}

int gs_k8s_affinity(const struct gs_k8s_topology *t, unsigned a, unsigned b)
{
        if (a == b)
                return 100;
        if (a >= GS_MAX_GPUS || b >= GS_MAX_GPUS)
                return 0;
        int s = 0;
        if (t->numa[a] >= 0 && t->numa[a] == t->numa[b])
                s += 10;
        if (t->pci[a][0] != '\0' && t->pci[b][0] != '\0')
                s += common_components(t->pci[a], t->pci[b]);
        return s;
}
