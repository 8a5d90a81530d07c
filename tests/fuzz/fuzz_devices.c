/* libFuzzer harness: device selection grammar (gs_select_devices). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/gpuslice.h>

static struct gs_device_info info;

static void add_mig(struct gs_gpu *g, unsigned gi, unsigned ci, const char *uuid)
{
        struct gs_mig_device *m = &g->migs[g->nmigs];
        m->index = g->nmigs;
        m->gi = gi;
        m->ci = ci;
        snprintf(m->uuid, sizeof(m->uuid), "%s", uuid);
        g->nmigs++;
}

/* GPU 0 plain; GPU 1 with MIG (gi1/ci0, gi2/ci0, gi2/ci1, a legacy UUID); GPU 2 MIG disabled. */
static void init_info(void)
{
        struct gs_gpu *g;

        snprintf(info.driver_version, sizeof(info.driver_version), "550.54.15");
        snprintf(info.cuda_version, sizeof(info.cuda_version), "12.4");
        info.ngpus = 3;

        g = &info.gpus[0];
        snprintf(g->uuid, sizeof(g->uuid), "GPU-11111111-2222-3333-4444-555555555555");
        snprintf(g->bus_id, sizeof(g->bus_id), "00000000:3B:00.0");

        g = &info.gpus[1];
        g->index = 1;
        snprintf(g->uuid, sizeof(g->uuid), "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
        snprintf(g->bus_id, sizeof(g->bus_id), "00000000:5E:00.0");
        g->mig_capable = g->mig_enabled = true;
        add_mig(g, 1, 0, "MIG-0a0a0a0a-1111-2222-3333-444444444444");
        add_mig(g, 2, 0, "MIG-1b1b1b1b-1111-2222-3333-444444444444");
        add_mig(g, 2, 1, "MIG-2c2c2c2c-1111-2222-3333-444444444444");
        add_mig(g, 3, 0, "MIG-GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee/3/0");

        g = &info.gpus[2];
        g->index = 2;
        snprintf(g->uuid, sizeof(g->uuid), "GPU-99999999-8888-7777-6666-000000000000");
        snprintf(g->bus_id, sizeof(g->bus_id), "00000001:AF:01.2");
        g->mig_capable = true;
        add_mig(g, 1, 0, "MIG-ffffffff-0000-0000-0000-000000000000");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static int ready;
        struct gs_selection sel;
        struct gs_error err;

        if (!ready) {
                init_info();
                ready = 1;
        }
        char *s = malloc(size + 1);
        if (s == NULL)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';

        memset(&err, 0, sizeof(err));
        int rc = gs_select_devices(s, &info, &sel, &err);
        if (rc == 0) {
                unsigned ngpus = 0, nmigs = 0;
                for (unsigned i = 0; i < GS_MAX_GPUS; i++) {
                        ngpus += sel.gpu[i];
                        bool any = sel.gpu[i];
                        for (unsigned j = 0; j < GS_MAX_MIGS; j++) {
                                nmigs += sel.mig[i][j];
                                any |= sel.mig[i][j];
                                /* only existing MIG devices of MIG-enabled GPUs */
                                if (sel.mig[i][j] && (i >= info.ngpus || !info.gpus[i].mig_enabled ||
                                                      j >= info.gpus[i].nmigs))
                                        abort();
                        }
                        if (i >= info.ngpus && sel.gpu[i])
                                abort();
                        if (any != gs_selection_uses_gpu(&sel, i))
                                abort();
                }
                if (ngpus != sel.ngpus || nmigs != sel.nmigs)
                        abort();
        } else {
                if (rc != -1 || err.code != GS_EINVAL)
                        abort();
                if (memchr(err.msg, '\0', sizeof(err.msg)) == NULL)
                        abort();
                /* a failed call leaves nothing selected */
                static const struct gs_selection zero;
                if (memcmp(&sel, &zero, sizeof(sel)) != 0)
                        abort();
        }
        free(s);
        return 0;
}
