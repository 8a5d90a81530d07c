/* libFuzzer harness: the device plugin's server side as the kubelet reaches it. The input is what a
 * client sends on the plugin's socket (HTTP/2 frames, gRPC framing, protobuf messages), fed in
 * pieces into a server connection (no socket) that serves the DevicePlugin service over a fixed
 * plan: 2 GPUs (one with MIG devices), whole GPUs and shares, CDI or env answers (first byte).
 * Nothing may crash, leak or read out of bounds; the answers themselves are discarded. The seed
 * corpus (corpus/k8s) holds real grpcio sessions: options, ListAndWatch, preferred, Allocate. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/plugin_int.h"
#include "kubelet/h2c.h"

static struct gs_device_info dev;
static struct gs_hostconfig hc;
static struct gs_k8s_opts opts;
static struct gs_k8s_plugin *plugin;

static void setup(void)
{
        dev.ngpus = 2;
        for (unsigned i = 0; i < 2; i++) {
                struct gs_gpu *g = &dev.gpus[i];
                g->index = i;
                g->minor = i;
                g->memory_total = 40ull << 30;
                snprintf(g->uuid, sizeof(g->uuid), "GPU-0000000%u-0000-0000-0000-000000000000", i);
                snprintf(g->bus_id, sizeof(g->bus_id), "00000000:0%u:00.0", i + 1);
        }
        dev.gpus[1].mig_enabled = true;
        dev.gpus[1].nmigs = 2;
        for (unsigned j = 0; j < 2; j++) {
                dev.gpus[1].migs[j].index = j;
                dev.gpus[1].migs[j].gi = 1 + j;
                snprintf(dev.gpus[1].migs[j].uuid, sizeof(dev.gpus[1].migs[j].uuid), "MIG-0000000%u-0000-0000-0000-000000000000", j);
        }
        gs_hostconfig_defaults(&hc);
        hc.dp.slices.n = 1;
        strcpy(hc.dp.slices.v[0], "gpu-4g=4Gi,25");
        opts.hc = &hc;
        plugin = calloc(1, sizeof(*plugin));
        plugin->o = &opts;
        plugin->cfg = &hc.dp;
        plugin->dev = &dev;
        strcpy(plugin->root, "/nonexistent");
        strcpy(plugin->host_root, "/nonexistent");
        if (gs_k8s_plan_build(&hc.dp, &dev, &plugin->plan, NULL) < 0)
                abort();
        for (size_t i = 0; i < plugin->plan.nres; i++) {
                plugin->ep[i].p = plugin;
                plugin->ep[i].res = &plugin->plan.res[i];
                plugin->ep[i].lfd = -1;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (plugin == NULL)
                setup();
        if (size < 2)
                return 0;
        plugin->plan.mode = data[0] & 1 ? GS_K8S_ALLOC_ENV : (data[0] & 2 ? GS_K8S_ALLOC_CDI_ANNOTATIONS : GS_K8S_ALLOC_CDI);
        struct gs_k8s_endpoint *ep = &plugin->ep[data[1] % plugin->plan.nres];
        plugin->health.gpu_bad[0] = data[0] & 4;
        data += 2;
        size -= 2;
        struct gs_h2c_conn *c = gs_h2c_server_new(-1, &gs_k8s_service, ep, NULL);
        if (c == NULL)
                return 0;
        /* in pieces, as reads would deliver them */
        size_t off = 0, piece = 1 + (size % 97);
        while (off < size) {
                size_t n = size - off < piece ? size - off : piece;
                if (gs_h2c_feed(c, data + off, n) < 0)
                        break;
                off += n;
                piece = piece * 3 % 4096 + 1;
        }
        gs_h2c_free(c);
        for (size_t i = 0; i < plugin->plan.nres; i++)
                plugin->ep[i].nwatchers = 0;
        return 0;
}
