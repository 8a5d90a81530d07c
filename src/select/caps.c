/* Driver capabilities (NVIDIA_DRIVER_CAPABILITIES, --compute/--utility/...): names, the sets as they
 * are mounted, and what each set takes from discovery (see caps.h). */
#include "select/caps.h"

#include <string.h>
#include <strings.h>

#include "common/error.h"

static const struct {
        const char *name;
        unsigned cap;
} cap_names[] = {
        {"compute", GS_CAP_COMPUTE},   {"compat32", GS_CAP_COMPAT32}, {"display", GS_CAP_DISPLAY},
        {"graphics", GS_CAP_GRAPHICS}, {"ngx", GS_CAP_NGX},           {"utility", GS_CAP_UTILITY},
        {"video", GS_CAP_VIDEO},
};

const struct gs_lib_link gs_lib_links[] = {
        {"libcuda.so.", "libcuda.so", "libcuda.so.1", GS_CAP_COMPUTE},
        {"libnvidia-opticalflow.so.", "libnvidia-opticalflow.so", "libnvidia-opticalflow.so.1", GS_CAP_VIDEO},
        {"libGLX_nvidia.so.", "libGLX_indirect.so.0", NULL, GS_CAP_GRAPHICS},
};
const size_t gs_nlib_links = sizeof(gs_lib_links) / sizeof(gs_lib_links[0]);

unsigned gs_cap_from_name(const char *name, size_t len)
{
        if (len == 3 && strncasecmp(name, "all", 3) == 0)
                return GS_CAP_ALL;
        for (size_t i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
                if (strlen(cap_names[i].name) == len && strncmp(name, cap_names[i].name, len) == 0)
                        return cap_names[i].cap;
        return 0;
}

unsigned gs_caps_expand(unsigned caps)
{
        if (caps & GS_CAP_VIDEO)
                caps |= GS_CAP_COMPUTE;
        if (caps & GS_CAP_DISPLAY)
                caps |= GS_CAP_GRAPHICS;
        return caps;
}

unsigned gs_caps_drvopts(unsigned caps, unsigned drvopts)
{
        if (!(caps & GS_CAP_COMPAT32))
                drvopts |= GS_DRV_NO_LIBS32;
        if (!(caps & GS_CAP_COMPUTE))
                drvopts |= GS_DRV_NO_MPS | GS_DRV_NO_UVM; /* MPS and UVM are compute-only */
        if (!(caps & GS_CAP_DISPLAY))
                drvopts |= GS_DRV_NO_MODESET;
        return drvopts;
}

bool gs_caps_want(unsigned caps, unsigned item_caps)
{
        return item_caps == 0 || (item_caps & caps) != 0;
}

int gs_caps_parse(const char *list, unsigned *caps, struct gs_error *err)
{
        *caps = 0;
        const char *p = list;
        while (*p != '\0') {
                size_t n = strcspn(p, ",");
                if (n > 0) {
                        unsigned found = gs_cap_from_name(p, n);
                        if (found == 0)
                                return gs_error_set(err, GS_EINVAL, "unknown driver capability '%.*s'", (int)n, p);
                        *caps |= found;
                }
                p += n;
                if (*p == ',')
                        p++;
        }
        return 0;
}
