/*
 * Driver capabilities (GS_CAP_*: NVIDIA_DRIVER_CAPABILITIES, `configure --compute ...`, `list`'s
 * filters, CDI specs): one name per capability, the sets as they are mounted, the discovery
 * options a set needs, and which items a set takes. The request (runtime/request.h), the
 * configure pipeline (container/configure.c), CDI specs and `list` share these rules.
 */
#ifndef GS_SELECT_CAPS_H
#define GS_SELECT_CAPS_H

#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

/* The links a container gets next to the driver's libraries: for each library whose base name
 * starts with `lib`, a link `link` -> `target` (NULL: the library's own name) in its directory, when
 * the container has one of `caps` (configure makes them, CDI specs ask cdi-hook to). */
struct gs_lib_link {
        const char *lib, *link, *target;
        unsigned caps;
};
extern const struct gs_lib_link gs_lib_links[];
extern const size_t gs_nlib_links;

/* GS_CAP_* of one capability name (len bytes, "all" included), or 0 if unknown. */
unsigned gs_cap_from_name(const char *name, size_t len);

/* Capabilities as they are mounted: video implies compute, display implies graphics. */
unsigned gs_caps_expand(unsigned caps);
/* Discovery options for a capability set (32-bit pass only with compat32, MPS/UVM only with
 * compute, modeset only with display), on top of the caller's GS_DRV_* words. */
unsigned gs_caps_drvopts(unsigned caps, unsigned drvopts);
/* Does an item needed by `item_caps` (0 = always) belong in a container with `caps`? */
bool gs_caps_want(unsigned caps, unsigned item_caps);
/* "compute,utility" -> GS_CAP_*; -1 naming the first unknown word. "all" = GS_CAP_ALL. */
int gs_caps_parse(const char *list, unsigned *caps, struct gs_error *err);

#endif
