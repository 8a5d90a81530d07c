/* libFuzzer harness: the host config parser (gs_hostconfig_parse). The input is handed over as
 * is (libFuzzer's buffer has exactly `size` bytes, no NUL after it): ASan sees any read past it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpuslice/gpuslice.h>

#include "runtime/hostconfig.h"

static void check_str(const char *s, size_t size, bool absolute, bool may_be_empty)
{
        if (memchr(s, '\0', size) == NULL)
                abort();
        if (s[0] == '\0' ? !may_be_empty : (absolute && s[0] != '/'))
                abort();
}

static void check_config(const struct gs_hostconfig *hc)
{
        check_str(hc->root, sizeof(hc->root), true, false);
        check_str(hc->ldcache, sizeof(hc->ldcache), false, true);
        check_str(hc->ldconfig, sizeof(hc->ldconfig), false, true);
        if (hc->ldconfig[0] != '\0' && hc->ldconfig[hc->ldconfig[0] == '@'] != '/')
                abort();
        check_str(hc->user, sizeof(hc->user), false, true);
        check_str(hc->log_file, sizeof(hc->log_file), true, true);
        check_str(hc->vgpu_library, sizeof(hc->vgpu_library), true, true);
        check_str(hc->regions_dir, sizeof(hc->regions_dir), true, false);
        if (hc->nvml_timeout_s < 1 || hc->nvml_timeout_s > 3600)
                abort();
        if ((hc->default_caps | hc->supported_caps) & ~(unsigned)GS_CAP_ALL)
                abort();
        if (hc->compat_mode != GS_COMPAT_LDCONFIG && hc->compat_mode != GS_COMPAT_MOUNT &&
            hc->compat_mode != GS_COMPAT_DISABLED)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct gs_hostconfig hc, before, again;
        struct gs_error err;

        gs_hostconfig_defaults(&hc);
        before = hc;
        memset(&err, 0, sizeof(err));
        int rc = gs_hostconfig_parse(&hc, (const char *)data, size, "fuzz.toml", &err);
        if (rc != 0) {
                /* an error names the file and a line, and leaves the config untouched */
                if (rc != -1 || err.code != GS_EFORMAT || memchr(err.msg, '\0', sizeof(err.msg)) == NULL ||
                    strncmp(err.msg, "fuzz.toml:", 10) != 0 || err.msg[10] < '1' || err.msg[10] > '9')
                        abort();
                if (memcmp(&hc, &before, sizeof(hc)) != 0)
                        abort();
                return 0;
        }
        if (err.code != 0)
                abort();
        check_config(&hc);
        /* the same text again, over its own result: the same result */
        again = hc;
        if (gs_hostconfig_parse(&again, (const char *)data, size, "fuzz.toml", &err) != 0 ||
            memcmp(&again, &hc, sizeof(hc)) != 0)
                abort();
        return 0;
}
