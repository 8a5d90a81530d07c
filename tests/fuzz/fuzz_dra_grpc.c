/* libFuzzer harness: the DRA plugin's gRPC calls as the kubelet (or anything that reaches its
 * sockets) makes them, past the HTTP/2 and gRPC framing (the shared h2c layer, fuzzed through the
 * device plugin's service: fuzz_k8s.c): the input's first byte picks the method (both DRA versions'
 * NodePrepareResources and NodeUnprepareResources, registration's GetInfo and
 * NotifyRegistrationStatus, an unknown one), the rest is the request message as the service
 * receives it. Prepare reads the claims from an API server that refuses connections (127.0.0.1:1,
 * one attempt): every claim is answered with its error, and the plugin must not crash, leak or
 * read out of bounds on any request. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dra/plugin_int.h"
#include "kubelet/h2c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gs_dra_opts opts;
static struct gs_device_info dev;
static struct gs_dra *p;

/* FUZZ_DRA_NOTES=1: the plugin's progress lines on stderr (what each call did) */
static void note(void *ud, const char *line)
{
        (void)ud;
        fprintf(stderr, "dra-plugin: %s\n", line);
}

static char dir[] = "/tmp/gs-fuzz-dra.XXXXXX";

/* at exit: the scratch directory (no prepare succeeds: no CDI spec is ever written there) */
static void tidy(void)
{
        static const char *const files[] = {"kubeconfig", "ca.crt", "checkpoint.json", "checkpoint.json.tmp",
                                             "checkpoint.lock"};
        char path[sizeof(dir) + 32];
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
                unlink(path);
        }
        rmdir(dir);
}

static void setup(void)
{
        char kc[sizeof(dir) + 16], ca[sizeof(dir) + 16];
        if (mkdtemp(dir) == NULL)
                abort();
        atexit(tidy);
        snprintf(kc, sizeof(kc), "%s/kubeconfig", dir);
        snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
        FILE *f = fopen(ca, "w"); /* (never used: the server refuses the connection first) */
        if (f == NULL || fclose(f) != 0 || (f = fopen(kc, "w")) == NULL)
                abort();
        fprintf(f, "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                   "clusters:\n- name: k\n  cluster: {server: \"https://127.0.0.1:1\", certificate-authority: \"%s\"}\n"
                   "users:\n- name: u\n  user: {token: t}\n",
                ca);
        fclose(f);
        p = calloc(1, sizeof(*p));
        struct gs_error err = {0};
        if (p == NULL || gs_kubeapi_open(&p->api, kc, &err) < 0) {
                fprintf(stderr, "fuzz_dra_grpc: %s\n", err.msg);
                abort();
        }
        p->api.attempts = 1;
        p->api.timeout_ms = 200;
        snprintf(p->api.res_version, sizeof(p->api.res_version), "v1"); /* (gs_kubeapi_open's default) */
        p->api_open = true;
        dev.ngpus = 1;
        snprintf(dev.gpus[0].uuid, sizeof(dev.gpus[0].uuid), "GPU-00000000-0000-0000-0000-000000000000");
        dev.gpus[0].memory_total = 40ull << 30;
        if (getenv("FUZZ_DRA_NOTES") != NULL)
                opts.note = note;
        p->o = &opts;
        p->driver = "gpu.gpuslice.io";
        snprintf(p->node, sizeof(p->node), "node-a");
        snprintf(p->plugin_dir, sizeof(p->plugin_dir), "%s", dir);
        p->dev = &dev;
        p->prep.dev = &dev;
        p->prep.api = &p->api;
        p->prep.driver = p->driver;
        p->prep.node = p->node;
        p->prep.cdi_dir = dir;
        p->prep.hook_path = "/usr/bin/gpuslice";
        p->prep.host_root = "";
        snprintf(p->prep.checkpoint, sizeof(p->prep.checkpoint), "%s/checkpoint.json", dir);
        p->prep.claims = json_object_new_object();
        char lock[sizeof(dir) + 32];
        snprintf(lock, sizeof(lock), "%s/checkpoint.lock", dir);
        p->prep.lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600); /* (dra/checkpoint.h: every call locks) */
        if (p->prep.lock_fd < 0)
                abort();
        p->prep_open = true;
        p->signal_fd = -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char *const paths[] = {
                "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
                "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources",
                "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
                "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources",
                "/pluginregistration.Registration/GetInfo", "/pluginregistration.Registration/NotifyRegistrationStatus",
                "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/Other",
        };
        if (p == NULL)
                setup();
        if (size < 1)
                return 0;
        struct gs_h2c_conn *c = gs_h2c_server_new(-1, &gs_dra_service, p, NULL);
        if (c == NULL)
                return 0;
        gs_dra_service.call(c, 1, paths[data[0] % (sizeof(paths) / sizeof(paths[0]))], data + 1, size - 1, p);
        gs_h2c_free(c);
        return 0;
}
