/* libFuzzer harness: requirement DSL (gs_require_check, gs_require_check_all, gs_version_compare). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/gpuslice.h>

#include "select/require.h"

static struct gs_device_info info;

static void init_info(void)
{
        snprintf(info.driver_version, sizeof(info.driver_version), "550.54.15");
        snprintf(info.cuda_version, sizeof(info.cuda_version), "12.4");
        info.ngpus = 3;
        snprintf(info.gpus[0].arch, sizeof(info.gpus[0].arch), "8.0");
        snprintf(info.gpus[0].brand, sizeof(info.gpus[0].brand), "Tesla");
        snprintf(info.gpus[1].arch, sizeof(info.gpus[1].arch), "9.0");
        snprintf(info.gpus[1].brand, sizeof(info.gpus[1].brand), "NvidiaRTX");
        info.gpus[1].mig_capable = info.gpus[1].mig_enabled = true;
        info.gpus[1].nmigs = 2;
        info.gpus[1].migs[1].index = 1;
        snprintf(info.gpus[2].arch, sizeof(info.gpus[2].arch), "7.5");
        snprintf(info.gpus[2].brand, sizeof(info.gpus[2].brand), "GeForce");
}

static void check_err(int rc, const struct gs_error *err)
{
        if (rc == 0)
                return;
        if (rc != -1 || (err->code != GS_EINVAL && err->code != GS_EUNSATISFIED))
                abort();
        if (memchr(err->msg, '\0', sizeof(err->msg)) == NULL)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static int ready;
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

        /* The whole input as one expression, with and without facts. */
        static const struct gs_require_facts facts = { "12.4", "550.54.15", "8.0", "Tesla" };
        memset(&err, 0, sizeof(err));
        int with = gs_require_check(s, &facts, &err);
        check_err(with, &err);
        int with_code = with ? err.code : 0;
        memset(&err, 0, sizeof(err));
        int without = gs_require_check(s, NULL, &err);
        check_err(without, &err);
        /* validity does not depend on the facts; with no facts every valid expression holds */
        if ((with_code == GS_EINVAL) != (without != 0))
                abort();

        /* Split at newlines into several expressions for gs_require_check_all. */
        const char *exprs[GS_MAX_REQUIRES + 1];
        size_t n = 0;
        for (char *p = s; n < GS_MAX_REQUIRES + 1;) {
                exprs[n++] = p;
                char *nl = strchr(p, '\n');
                if (nl == NULL)
                        break;
                *nl = '\0';
                p = nl + 1;
        }
        struct gs_selection sel;
        memset(&sel, 0, sizeof(sel));
        if (size > 0) {
                sel.gpu[data[0] % 4] = true;
                sel.mig[1][data[size - 1] % 2] = (data[0] & 0x80) != 0;
        }
        memset(&err, 0, sizeof(err));
        check_err(gs_require_check_all(exprs, n, &info, &sel, &err), &err);
        check_err(gs_require_check_all(exprs, n, &info, NULL, &err), &err);

        /* Version comparison on the first two expressions: antisymmetric. */
        if (n >= 2) {
                int ab = gs_version_compare(exprs[0], exprs[1]);
                int ba = gs_version_compare(exprs[1], exprs[0]);
                if (ab == -2 ? ba != -2 : ab != -ba)
                        abort();
                if (ab < -2 || ab > 1)
                        abort();
        }
        free(s);
        return 0;
}
