/* libFuzzer harness: the OCI state and config.json parsers, and the env contract built from the
 * parsed process.env (gs_oci_state_parse, gs_oci_config_parse, gs_request_from_env). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/gpuslice.h>

#include "runtime/hostconfig.h"
#include "runtime/oci.h"
#include "runtime/request.h"
#include "vgpu/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct gs_error err = {0};
        struct gs_oci_state st;
        if (gs_oci_state_parse((const char *)data, size, &st, &err) == 0) {
                if (st.id[0] == '\0' || st.bundle[0] != '/' || st.pid < 0)
                        abort(); /* accepted a state that breaks the parser's promises */
        } else if (err.msg[0] == '\0') {
                abort(); /* a failure without a message */
        }
        struct gs_oci_config cfg;
        memset(&err, 0, sizeof(err));
        if (gs_oci_config_parse((const char *)data, size, "/bundle", &cfg, &err) < 0) {
                if (err.msg[0] == '\0')
                        abort();
                return 0;
        }
        if (cfg.rootfs[0] != '/')
                abort();
        static struct gs_hostconfig hc;
        gs_hostconfig_defaults(&hc);
        struct gs_request rq;
        for (int privileged = 0; privileged < 2; privileged++) {
                memset(&err, 0, sizeof(err));
                if (gs_request_from_env(&rq, cfg.env, cfg.nenv, privileged, &hc, &err) == 0) {
                        if (rq.opts.nrequires > GS_MAX_REQUIRES || (rq.gpu && rq.opts.no_gpu))
                                abort();
                        gs_request_release(&rq);
                } else if (err.msg[0] == '\0' || err.stage == NULL) {
                        abort();
                }
        }
        /* With an allocator's options (1Gi, 30 %, cap, normal) no env widens the slice
         * (runtime/slice_rules.h). */
        struct gs_slice_opts alloc = {.memory = "1Gi", .compute = "30"};
        for (int privileged = 0; privileged < 2; privileged++) {
                memset(&err, 0, sizeof(err));
                struct gs_request_src in = {.env = cfg.env, .nenv = cfg.nenv, .privileged = privileged, .alloc = &alloc};
                if (gs_request_from_src(&rq, &in, &hc, &err) != 0)
                        continue;
                const struct gs_slice_opts *o = &rq.opts.slice;
                uint64_t b;
                unsigned pct;
                /* the global values are there and within 1Gi / 30 %; a per-device one (NULL: the
                 * global) too */
                if (o->memory == NULL || o->compute == NULL)
                        abort();
                for (int i = -1; i < GS_SLICE_MAX_DEVICES; i++) {
                        const char *m = i < 0 ? o->memory : o->memory_dev[i];
                        const char *c = i < 0 ? o->compute : o->compute_dev[i];
                        if (m != NULL && (gs_vgpu_parse_size(m, &b) < 0 || b == 0 || b > (1ull << 30)))
                                abort(); /* unlimited, or above the allocator's 1Gi */
                        if (c != NULL && (gs_vgpu_parse_percent(c, &pct) < 0 || pct == 0 || pct > 30))
                                abort();
                }
                if (o->compute_mode != NULL && strcmp(o->compute_mode, "cap") != 0)
                        abort();
                if (o->priority != NULL && strcmp(o->priority, "high") == 0)
                        abort();
                gs_request_release(&rq);
        }
        gs_oci_config_release(&cfg);
        return 0;
}
