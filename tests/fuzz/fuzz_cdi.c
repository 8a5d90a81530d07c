/* libFuzzer harness: CDI spec reading (JSON via json-c, YAML via libyaml: gs_cdi_spec_parse), the
 * checks `cdi list` makes (gs_cdi_spec_names), and the YAML emitter: whatever a spec parses to must
 * be written as YAML that reads back as the same tree. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cdi/cdi.h"

/* Trees the round trip is checked on: no doubles (their text form may differ) and no string with
 * a NUL byte (not representable in our C strings). */
static bool comparable(json_object *o, int depth)
{
        if (depth > 64)
                return false;
        switch (json_object_get_type(o)) {
        case json_type_double:
                return false;
        case json_type_string:
                return strlen(json_object_get_string(o)) == (size_t)json_object_get_string_len(o);
        case json_type_array:
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        if (!comparable(json_object_array_get_idx(o, i), depth + 1))
                                return false;
                return true;
        case json_type_object: {
                json_object_object_foreach(o, k, v)
                {
                        (void)k;
                        if (!comparable(v, depth + 1))
                                return false;
                }
                return true;
        }
        default:
                return true;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        for (int hint = 0; hint < 2; hint++) {
                struct gs_error err = {0};
                json_object *spec = gs_cdi_spec_parse((const char *)data, size, hint ? GS_CDI_JSON : GS_CDI_YAML, &err);
                if (spec == NULL) {
                        if (err.msg[0] == '\0')
                                abort(); /* a failure without a message */
                        continue;
                }
                char **names = NULL;
                size_t n = 0;
                struct gs_error nerr = {0};
                if (gs_cdi_spec_names(spec, &names, &n, &nerr) == 0) {
                        for (size_t i = 0; i < n; i++)
                                if (names[i] == NULL || strchr(names[i], '=') == NULL)
                                        abort(); /* every name is vendor/class=name */
                        gs_cdi_names_free(names);
                } else if (nerr.msg[0] == '\0') {
                        abort();
                }
                struct gs_error yerr = {0};
                char *yaml = gs_yaml_emit(spec, &yerr);
                if (yaml != NULL && comparable(spec, 0)) {
                        struct gs_error rerr = {0};
                        json_object *back = gs_yaml_parse(yaml, strlen(yaml), &rerr);
                        if (back == NULL || !json_object_equal(spec, back))
                                abort(); /* the emitter wrote YAML that does not read back the same */
                        json_object_put(back);
                }
                free(yaml);
                json_object_put(spec);
        }
        return 0;
}
