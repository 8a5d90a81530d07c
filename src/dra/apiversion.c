/* Which resource.k8s.io version the DRA plugin speaks (see dra/apiversion.h). */
#include "dra/apiversion.h"

#include <json-c/json.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/strutil.h"

bool gs_dra_api_version_valid(const char *want)
{
        return want == NULL || strcmp(want, "auto") == 0 || strcmp(want, "v1") == 0 || strcmp(want, "v1beta2") == 0;
}

bool gs_dra_api_shares(const struct gs_kubeapi *api)
{
        return strcmp(api->res_version, "v1") == 0;
}

/* The APIGroup's versions[].version: has it `v`? */
static bool serves(json_object *group, const char *v)
{
        json_object *vs = NULL;
        if (!json_object_object_get_ex(group, "versions", &vs) || !json_object_is_type(vs, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(vs); i++) {
                json_object *one = NULL;
                if (json_object_object_get_ex(json_object_array_get_idx(vs, i), "version", &one) &&
                    strcmp(json_object_get_string(one), v) == 0)
                        return true;
        }
        return false;
}

int gs_dra_api_version(struct gs_kubeapi *api, const char *want, struct gs_error *err)
{
        if (!gs_dra_api_version_valid(want))
                return gs_error_set(err, GS_EINVAL, "unknown resource.k8s.io version '%.40s' (auto, v1, v1beta2)", want);
        if (want != NULL && strcmp(want, "auto") != 0) {
                gs_strlcpy(api->res_version, want, sizeof(api->res_version));
                return 0;
        }
        long status = 0;
        gs_autofree char *body = NULL;
        if (gs_kubeapi_call(api, "GET", "/apis/resource.k8s.io", NULL, &status, &body, err) < 0)
                return gs_error_wrap(err, "discovery of resource.k8s.io");
        if (status == 404)
                return gs_error_set(err, GS_ENOTFOUND, "the API server does not serve resource.k8s.io (is its "
                                    "DynamicResourceAllocation feature on?)");
        if (status != 200)
                return gs_error_set(err, GS_EINVAL, "GET /apis/resource.k8s.io: HTTP %ld", status);
        json_object *group = json_tokener_parse(body);
        bool v1 = group != NULL && serves(group, "v1"), v1beta2 = group != NULL && serves(group, "v1beta2");
        json_object_put(group);
        if (!v1 && !v1beta2)
                return gs_error_set(err, GS_EUNSATISFIED, "the API server serves resource.k8s.io neither as v1 nor as "
                                    "v1beta2 (Kubernetes 1.33 or later is needed)");
        strcpy(api->res_version, v1 ? "v1" : "v1beta2");
        return 0;
}
