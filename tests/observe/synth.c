/* Synthetic usage regions (synth.h). */
#include "synth.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static uint64_t realtime_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gs_synth_region(struct gs_region_file *f, unsigned ndev, unsigned nprocs, unsigned seed)
{
        memset(f, 0, sizeof(*f));
        struct gs_region_header *h = &f->hdr;
        uint64_t magic;
        memcpy(&magic, GS_REGION_MAGIC_BYTES, 8);
        atomic_store(&h->magic, magic);
        h->version = GS_REGION_VERSION;
        h->header_size = GS_REGION_HEADER_SIZE;
        h->ndevices = ndev;
        h->max_procs = GS_REGION_MAX_PROCS;
        h->slot_size = GS_REGION_SLOT_SIZE;
        h->region_size = GS_REGION_SIZE;
        h->created_ns = realtime_ns();
        h->creator_pid = 100;
        atomic_store(&h->slot_hwm, nprocs);
        for (unsigned d = 0; d < ndev; d++) {
                h->limit[d] = (d + 1) * 1024 * GS_SYNTH_MiB;
                snprintf(h->uuid[d], GS_REGION_UUID_LEN, "GPU-5e5e5e5e-0000-4000-8000-%08u%04u", seed % 100000000u, d);
                atomic_store(&h->compute_limit[d], 2500);
        }
        atomic_store(&f->ctr.priority, seed % 3);
        for (unsigned d = 0; d < GS_REGION_MAX_DEVICES; d++)
                atomic_store(&f->ctr.dev[d].compute_via, GS_REGION_UNSET);
        for (unsigned d = 0; d < ndev; d++) {
                struct gs_region_dev_counters *c = &f->ctr.dev[d];
                atomic_store(&c->compute_via, d % 3);
                atomic_store(&c->launches, GS_SYNTH_LAUNCHES(d));
                atomic_store(&c->wait_bucket[gs_region_wait_bucket(30000)], 10);
                atomic_store(&c->wait_bucket[gs_region_wait_bucket(2000000)], 5 * (d + 1));
                atomic_store(&c->wait_bucket[gs_region_wait_bucket(2000000000)], 1);
                atomic_store(&c->wait_sum_ns, GS_SYNTH_WAIT_SUM_NS(d));
        }
        uint64_t now = realtime_ns();
        for (unsigned i = 0; i < nprocs; i++) {
                struct gs_region_slot *s = &f->slots[i];
                atomic_store(&s->pid, (int32_t)(100 + i));
                atomic_store(&s->start_time, 1000 + i);
                atomic_store(&s->heartbeat_ns, now);
                atomic_store(&s->last_launch_ns, now);
                for (unsigned d = 0; d < ndev; d++) {
                        atomic_store(&s->used[d], (i + 1) * GS_SYNTH_MiB);
                        atomic_store(&s->extra[d], 64 * GS_SYNTH_MiB);
                        atomic_store(&s->busy_ns[d], (i + 1) * 1000000ull);
                }
        }
}

void gs_synth_region_v2(struct gs_region_file *f, unsigned ndev, unsigned nprocs, unsigned seed)
{
        gs_synth_region(f, ndev, nprocs, seed);
        f->hdr.version = GS_REGION_VERSION_2;
        f->hdr.region_size = GS_REGION_SIZE_V2;
        memset(&f->ctr, 0, sizeof(f->ctr));
}

int gs_synth_corrupt(const char *kind, struct gs_region_file *f, size_t *len, size_t *size)
{
        gs_synth_region(f, 2, 3, 7);
        struct gs_region_header *h = &f->hdr;
        *len = sizeof(*f);
        *size = 0;
        if (strcmp(kind, "truncated") == 0)
                *len = sizeof(*f) / 2;
        else if (strcmp(kind, "huge") == 0)
                *size = 64 * GS_SYNTH_MiB;
        else if (strcmp(kind, "magic") == 0)
                memcpy(&h->magic, "NOTOURS!", 8);
        else if (strcmp(kind, "version") == 0)
                h->version = 1;
        else if (strcmp(kind, "layout") == 0)
                h->slot_size = 320;
        else if (strcmp(kind, "hwm") == 0)
                atomic_store(&h->slot_hwm, 4096);
        else if (strcmp(kind, "ndev0") == 0)
                h->ndevices = 0;
        else if (strcmp(kind, "ndev99") == 0)
                h->ndevices = 99;
        else if (strcmp(kind, "uuid") == 0)
                memset(h->uuid[1], 'A', GS_REGION_UUID_LEN);
        else if (strcmp(kind, "share") == 0)
                atomic_store(&h->compute_limit[0], 20000);
        else if (strcmp(kind, "zero") == 0)
                atomic_store(&h->magic, 0);
        else if (strcmp(kind, "priority") == 0)
                atomic_store(&f->ctr.priority, 3);
        else if (strcmp(kind, "via") == 0)
                atomic_store(&f->ctr.dev[1].compute_via, 7);
        else if (strcmp(kind, "v2big") == 0)
                h->version = GS_REGION_VERSION_2;
        else if (strcmp(kind, "v3small") == 0)
                *len = GS_REGION_SIZE_V2;
        else
                return -1;
        return 0;
}
