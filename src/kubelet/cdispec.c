/* The device plugin's CDI spec (see cdispec.h). */
#include "kubelet/cdispec.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/strutil.h"
#include "runtime/hook_exe.h"

int gs_k8s_cdi_rebase(json_object *o, const char *root, const char *host_root, struct gs_error *err)
{
        if (json_object_is_type(o, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        if (gs_k8s_cdi_rebase(json_object_array_get_idx(o, i), root, host_root, err) < 0)
                                return -1;
                return 0;
        }
        if (!json_object_is_type(o, json_type_object))
                return 0;
        json_object_object_foreach(o, key, val) {
                if (strcmp(key, "hostPath") != 0 || !json_object_is_type(val, json_type_string)) {
                        if (gs_k8s_cdi_rebase(val, root, host_root, err) < 0)
                                return -1;
                        continue;
                }
                const char *hp = json_object_get_string(val);
                size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
                if (strncmp(hp, root, rl) != 0 || (hp[rl] != '/' && hp[rl] != '\0'))
                        continue;
                char moved[PATH_MAX];
                int n = snprintf(moved, sizeof(moved), "%s%s", strcmp(host_root, "/") == 0 ? "" : host_root, hp + rl);
                if (n < 0 || (size_t)n >= sizeof(moved))
                        return gs_error_set(err, GS_EINVAL, "host path too long: %s%s", host_root, hp + rl);
                if (json_object_set_string(val, moved) == 0)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        return 0;
}

/* The slice devices of resource r: one share (<gpu>-<slice>) and each larger count a GPU offers
 * (<gpu>-<slice>-x<k>: k shares' limits, the allocator's word in its hook's args). */
static int add_slices(const struct gs_k8s_plan *p, const struct gs_k8s_resource *r, struct gs_cdi_slice *slices,
                      size_t *n, struct gs_error *err)
{
        unsigned most = 1;
        for (unsigned g = 0; g < p->dev->ngpus; g++)
                most = gs_k8s_shares_of(r, g) > most ? gs_k8s_shares_of(r, g) : most;
        for (unsigned k = 1; k <= most && k <= 64; k++) {
                struct gs_cdi_slice *sl = &slices[(*n)++];
                memset(sl, 0, sizeof(*sl));
                if (gs_k8s_slice_device(r, k, sl->name, sizeof(sl->name)) < 0)
                        return gs_error_set(err, GS_EINVAL, "slice name too long: %s", r->cdi_slice);
                gs_k8s_format_size(r->memory * k, sl->memory, sizeof(sl->memory));
                if (r->memory == 0) /* a compute-only share: the slice needs a memory value; 0 = none */
                        snprintf(sl->memory, sizeof(sl->memory), "0");
                sl->compute = r->compute * k < 100 ? r->compute * k : (r->compute != 0 ? 100 : 0);
                gs_strlcpy(sl->priority, r->priority, sizeof(sl->priority));
                sl->gpus_only = k > 1;
        }
        return 0;
}

int gs_k8s_cdi_write(struct gs_context *ctx, const struct gs_k8s_plan *p, const char *path, const char *hook_path,
                     const char *host_root, struct gs_error *err)
{
        /* (a share count per resource, up to 64: device-plugin.replicas' most) */
        gs_autofree struct gs_cdi_slice *slices = calloc(GS_K8S_MAX_RESOURCES * 64, sizeof(*slices));
        size_t n = 0;
        if (slices == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        for (size_t i = 0; i < p->nres; i++)
                if (p->res[i].cdi_slice[0] != '\0' && add_slices(p, &p->res[i], slices, &n, err) < 0)
                        return -1;
        char exe[PATH_MAX];
        if (hook_path == NULL || hook_path[0] == '\0') {
                if (gs_hook_exe_default(exe, sizeof(exe), err) < 0)
                        return gs_error_wrap(err, "set device-plugin.hook-path");
                hook_path = exe;
        }
        struct gs_cdi_opts o = {
                .vendor = p->cdi_vendor,
                .class = p->cdi_class,
                .strategy = GS_CDI_NAME_INDEX,
                .slices = slices,
                .nslices = n,
                .hook_path = hook_path,
        };
        json_object *spec = gs_cdi_generate(ctx, &o, err);
        if (spec == NULL)
                return gs_error_wrap(err, "CDI spec");
        int rv = -1;
        gs_autofree char *text = NULL;
        if (host_root != NULL && host_root[0] != '\0' && strcmp(host_root, gs_context_root(ctx)) != 0 &&
            gs_k8s_cdi_rebase(spec, gs_context_root(ctx), host_root, err) < 0)
                goto out;
        text = gs_cdi_spec_format(spec, gs_cdi_format_for_path(path), err);
        if (text == NULL || gs_cdi_write_file(path, text, err) < 0) {
                gs_error_wrap(err, "CDI spec %s", path);
                goto out;
        }
        rv = 0;
out:
        json_object_put(spec);
        return rv;
}
