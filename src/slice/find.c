/* Finding the slices on this host (find.h). */
#include "slice/find.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/strutil.h"
#include "region/region.h"

static int by_id(const void *a, const void *b)
{
        return strcmp(((const struct gs_slice_entry *)a)->id, ((const struct gs_slice_entry *)b)->id);
}

int gs_slice_list(const char *regions_dir, struct gs_slice_entry **out, size_t *n, struct gs_error *err)
{
        *out = NULL;
        *n = 0;
        if (regions_dir == NULL)
                regions_dir = GS_SLICE_REGIONS_DIR;
        int regfd = open(regions_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (regfd < 0)
                return errno == ENOENT ? 0 : gs_error_sys(err, "open %s", regions_dir);
        DIR *d = fdopendir(regfd);
        if (d == NULL) {
                close(regfd);
                return gs_error_sys(err, "read %s", regions_dir);
        }
        size_t cap = 0;
        struct gs_slice_entry *v = NULL;
        struct dirent *e;
        int rc = 0;
        while ((e = readdir(d)) != NULL) {
                pid_t owner = 0;
                if (e->d_name[0] == '.' || !gs_slice_id_valid(e->d_name) ||
                    gs_slice_owner_alive(dirfd(d), e->d_name, &owner) != 1)
                        continue;
                if (*n == cap) {
                        cap = cap != 0 ? cap * 2 : 16;
                        struct gs_slice_entry *nv = realloc(v, cap * sizeof(*v));
                        if (nv == NULL) {
                                rc = gs_error_set(err, GS_ENOMEM, "out of memory");
                                break;
                        }
                        v = nv;
                }
                struct gs_slice_entry *s = &v[(*n)++];
                memset(s, 0, sizeof(*s));
                gs_strlcpy(s->id, e->d_name, sizeof(s->id));
                s->owner = owner;
                gs_slice_read_labels(dirfd(d), e->d_name, &s->labels);
                s->has_live = gs_slice_read_live(dirfd(d), e->d_name, &s->limits);
        }
        closedir(d);
        if (rc < 0) {
                free(v);
                *n = 0;
                return -1;
        }
        if (*n > 1)
                qsort(v, *n, sizeof(*v), by_id);
        *out = v;
        return 0;
}

/* A directory path: its last component, when its parent is the regions directory. */
static int from_path(const char *regions_dir, const char *what, char *id, size_t len, struct gs_error *err)
{
        char real[PATH_MAX], regs[PATH_MAX];
        if (realpath(what, real) == NULL)
                return gs_error_sys(err, "slice directory %s", what);
        if (realpath(regions_dir, regs) == NULL)
                return gs_error_sys(err, "regions directory %s", regions_dir);
        char *slash = strrchr(real, '/');
        if (slash == NULL || slash == real)
                return gs_error_set(err, GS_ENOTFOUND, "%s is not a slice directory under %s", what, regions_dir);
        *slash = '\0';
        if (strcmp(real, regs) != 0)
                return gs_error_set(err, GS_ENOTFOUND, "%s is not a slice directory under %s", what, regions_dir);
        if (!gs_strlcpy(id, slash + 1, len))
                return gs_error_set(err, GS_EINVAL, "slice id too long");
        return 0;
}

/* namespace/pod[/container] -> the one entry of that pod (and container). */
static int from_pod(const struct gs_slice_entry *v, size_t n, const char *what, char *id, size_t len,
                    struct gs_error *err)
{
        char ns[GS_SLICE_LABEL_MAX], pod[GS_SLICE_LABEL_MAX], ctr[GS_SLICE_LABEL_MAX] = "";
        const char *a = strchr(what, '/'), *b = a != NULL ? strchr(a + 1, '/') : NULL;
        size_t nl = (size_t)(a - what), pl = b != NULL ? (size_t)(b - a - 1) : strlen(a + 1);
        if (nl == 0 || nl >= sizeof(ns) || pl == 0 || pl >= sizeof(pod) || (b != NULL && (strlen(b + 1) == 0 ||
                                                                                          strchr(b + 1, '/') != NULL ||
                                                                                          strlen(b + 1) >= sizeof(ctr))))
                return gs_error_set(err, GS_EINVAL, "'%s': a slice is a container id, a slice directory, or "
                                                    "namespace/pod[/container]", what);
        memcpy(ns, what, nl);
        ns[nl] = '\0';
        memcpy(pod, a + 1, pl);
        pod[pl] = '\0';
        if (b != NULL)
                strcpy(ctr, b + 1);
        size_t found = 0, which = 0;
        char names[512] = "";
        for (size_t i = 0; i < n; i++) {
                const struct gs_slice_labels *l = &v[i].labels;
                if (strcmp(l->ns, ns) != 0 || strcmp(l->pod, pod) != 0 || (ctr[0] != '\0' && strcmp(l->container, ctr) != 0))
                        continue;
                size_t k = strlen(names);
                snprintf(names + k, sizeof(names) - k, "%s%s", found > 0 ? ", " : "", l->container[0] ? l->container : v[i].id);
                found++;
                which = i;
        }
        if (found == 0)
                return gs_error_set(err, GS_ENOTFOUND, "no live slice of pod %s/%s%s%s", ns, pod, ctr[0] ? "/" : "", ctr);
        if (found > 1)
                return gs_error_set(err, GS_EINVAL, "pod %s/%s has %zu sliced containers (%s): name one as %s/%s/CONTAINER",
                                    ns, pod, found, names, ns, pod);
        gs_strlcpy(id, v[which].id, len);
        return 0;
}

int gs_slice_resolve(const char *regions_dir, const char *what, char *id, size_t len, struct gs_error *err)
{
        if (regions_dir == NULL)
                regions_dir = GS_SLICE_REGIONS_DIR;
        if (what == NULL || *what == '\0')
                return gs_error_set(err, GS_EINVAL, "no slice named");
        if (what[0] == '/' || what[0] == '.')
                return from_path(regions_dir, what, id, len, err);
        gs_autofree struct gs_slice_entry *v = NULL;
        size_t n = 0;
        if (gs_slice_list(regions_dir, &v, &n, err) < 0)
                return -1;
        if (strchr(what, '/') != NULL)
                return from_pod(v, n, what, id, len, err);
        size_t found = 0, which = 0;
        for (size_t i = 0; i < n; i++) {
                if (strcmp(v[i].id, what) == 0) {
                        found = 1, which = i;
                        break;
                }
                if (strncmp(v[i].id, what, strlen(what)) == 0)
                        found++, which = i;
        }
        if (found == 0)
                return gs_error_set(err, GS_ENOTFOUND, "no live slice '%s' under %s (`gpuslice slice list` shows them)",
                                    what, regions_dir);
        if (found > 1)
                return gs_error_set(err, GS_EINVAL, "'%s' is the start of %zu slices' ids: give more of it", what, found);
        gs_strlcpy(id, v[which].id, len);
        return 0;
}

/* The last GS_SLICE_CHANGES_SHOWN lines of <id>/changes. */
static void read_changes(int regfd, const char *id, struct gs_slice_info *out)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/changes", id);
        gs_autoclose int fd = openat(regfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        gs_autofclose FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        if (f == NULL)
                return;
        fd = -1; /* the FILE owns it */
        char line[512];
        while (fgets(line, sizeof(line), f) != NULL) {
                line[strcspn(line, "\n")] = '\0';
                if (out->nchanges == GS_SLICE_CHANGES_SHOWN) {
                        memmove(out->changes[0], out->changes[1], sizeof(out->changes[0]) * (GS_SLICE_CHANGES_SHOWN - 1));
                        out->nchanges--;
                }
                gs_strlcpy(out->changes[out->nchanges++], line, sizeof(out->changes[0]));
        }
}

int gs_slice_show(const char *regions_dir, const char *id, struct gs_slice_info *out, struct gs_error *err)
{
        memset(out, 0, sizeof(*out));
        if (regions_dir == NULL)
                regions_dir = GS_SLICE_REGIONS_DIR;
        if (!gs_slice_id_valid(id))
                return gs_error_set(err, GS_EINVAL, "invalid slice id '%s'", id);
        gs_autoclose int regfd = open(regions_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (regfd < 0)
                return gs_error_sys(err, "open %s", regions_dir);
        if (gs_slice_owner_alive(regfd, id, &out->e.owner) != 1)
                return gs_error_set(err, GS_ENOTFOUND, "no live slice %s under %s", id, regions_dir);
        gs_strlcpy(out->e.id, id, sizeof(out->e.id));
        gs_slice_read_labels(regfd, id, &out->e.labels);
        out->e.has_live = gs_slice_read_live(regfd, id, &out->e.limits);
        read_changes(regfd, id, out);
        char path[PATH_MAX];
        struct gs_region *r = NULL;
        char rerr[256];
        snprintf(path, sizeof(path), "%s/%s/usage", regions_dir, id);
        if (gs_region_open_snapshot(path, &r, rerr, sizeof(rerr)) < 0)
                return 0; /* no region yet: nothing has used the GPU */
        out->ndevices = gs_region_ndevices(r);
        for (unsigned i = 0; i < out->ndevices && i < GS_SLICE_MAX_DEVICES; i++) {
                struct gs_slice_device *d = &out->dev[i];
                gs_strlcpy(d->uuid, gs_region_file(r)->hdr.uuid[i], sizeof(d->uuid));
                gs_region_usage(r, i, &d->used);
                d->quota = out->e.has_live == 1 ? gs_slice_limits_memory(&out->e.limits, i) : gs_region_limit(r, i);
                d->compute = out->e.has_live == 1 ? gs_slice_limits_compute(&out->e.limits, i) : 0;
                d->over = d->quota != 0 && d->used > d->quota;
        }
        gs_region_close(r);
        return 0;
}
