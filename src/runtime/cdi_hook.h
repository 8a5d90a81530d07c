/*
 * The createContainer hooks a generated CDI spec names (`gpuslice cdi-hook ...`, cdi_hook.c): the
 * container work of CDI (src/cdi only describes the specs that name them).
 */
#ifndef GS_RUNTIME_CDI_HOOK_H
#define GS_RUNTIME_CDI_HOOK_H

#include <stddef.h>

#include <gpuslice/gpuslice.h>

/* Both hooks read the OCI state from `state_fd` and the bundle's config.json for the rootfs; they
 * read nothing from the environment. */

/* "TARGET::LINK": LINK absolute, TARGET non-empty. Returns pointers into a copy in `buf`. */
int gs_cdi_parse_link(const char *arg, char *buf, size_t len, const char **target, const char **link,
                      struct gs_error *err);
/* Each "TARGET::LINK": a symlink LINK -> TARGET in the rootfs, its parent resolved (and created)
 * inside the rootfs by fd as the rootfs owner; an existing entry at LINK is left alone. */
int gs_cdi_hook_create_symlinks(int state_fd, const char *const *links, size_t n, struct gs_error *err);
/* The host ldconfig (sealed memfd, sandbox of src/container/ldconfig.c) on the rootfs, with
 * `folders` (in-container paths) indexed. */
int gs_cdi_hook_update_ldcache(int state_fd, const char *const *folders, size_t n, struct gs_error *err);

#endif
