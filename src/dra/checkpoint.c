/* The DRA plugin's checkpoint: shared, locked, rebuilt from the specs when corrupt (see dra/checkpoint.h). */
#include "dra/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strutil.h"
#include "dra/status.h"
#include "kubelet/quantity.h"

int gs_dra_ck_save(struct gs_dra_prep *p, struct gs_error *err)
{
        json_object *doc = json_object_new_object();
        if (doc == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        json_object_object_add(doc, "version", json_object_new_int(1));
        json_object_object_add(doc, "driver", json_object_new_string(p->driver));
        json_object_object_add(doc, "claims", json_object_get(p->claims));
        const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
        size_t n = text != NULL ? strlen(text) : 0;
        gs_autofree char *line = text != NULL ? malloc(n + 2) : NULL;
        if (line != NULL) {
                memcpy(line, text, n);
                memcpy(line + n, "\n", 2);
        }
        int rv = line != NULL ? gs_cdi_write_file_flags(p->checkpoint, line, GS_CDI_WRITE_DURABLE, err) : gs_error_set(err, GS_ENOMEM, "out of memory");
        json_object_put(doc);
        return rv < 0 ? gs_error_wrap(err, "checkpoint") : 0;
}

/* <plugin-dir>/claim-<uid>.ref: the claim's namespace and name, for a rebuild (dra/checkpoint.h). */
static int ref_path(const struct gs_dra_prep *p, const char *uid, char *buf, size_t len)
{
        const char *slash = strrchr(p->checkpoint, '/');
        int dl = slash != NULL ? (int)(slash - p->checkpoint) : 1;
        size_t n = (size_t)snprintf(buf, len, "%.*s/claim-%s.ref", dl, slash != NULL ? p->checkpoint : ".", uid);
        return n < len ? 0 : -1;
}

/* Its text: "NAMESPACE NAME\n", then "DEVICE SHAREID\n" for each device allocated as a share
 * (its AllocatedDeviceStatus needs the shareID: the API server refuses an entry without it). */
#define REF_MAX (400 + GS_DRA_MAX_RESULTS * 130)

int gs_dra_ck_ref_write(const struct gs_dra_prep *p, const struct gs_dra_claim *c, struct gs_error *err)
{
        char path[PATH_MAX], text[REF_MAX];
        if (ref_path(p, c->uid, path, sizeof(path)) < 0)
                return gs_error_set(err, GS_EINVAL, "plugin directory path too long");
        size_t n = (size_t)snprintf(text, sizeof(text), "%s %s\n", c->ns, c->name); /* (at most 318 + 129 each) */
        for (size_t i = 0; i < c->n && n < sizeof(text); i++)
                if (c->r[i].share_id[0] != '\0')
                        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s %s\n", c->r[i].device, c->r[i].share_id);
        return gs_cdi_write_file_flags(path, text, GS_CDI_WRITE_NOSYNC, err) < 0 ? gs_error_wrap(err, "claim reference") : 0;
}

void gs_dra_ck_ref_remove(const struct gs_dra_prep *p, const char *uid)
{
        char path[PATH_MAX];
        if (ref_path(p, uid, path, sizeof(path)) == 0 && unlink(path) < 0 && errno != ENOENT)
                gs_log_warn("remove %s: %s", path, strerror(errno));
}

/* The claim's reference file's text, as prepare wrote it: false when there is none. */
static bool ref_load(const struct gs_dra_prep *p, const char *uid, char *text, size_t len)
{
        char path[PATH_MAX];
        if (ref_path(p, uid, path, sizeof(path)) < 0)
                return false;
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        ssize_t n = fd >= 0 ? read(fd, text, len - 1) : -1;
        if (n <= 0)
                return false;
        text[n] = '\0';
        return true;
}

/* The claim's namespace and name from its reference's first line: false when it is not one (DNS
 * names only: they go into URL paths). */
static bool ref_name(const char *text, char ns[64], char name[254])
{
        if (sscanf(text, "%63s %253s", ns, name) != 2)
                return false;
        static const char ok[] = "abcdefghijklmnopqrstuvwxyz0123456789-.";
        return strlen(ns) <= 63 && strspn(ns, ok) == strlen(ns) && strchr(ns, '.') == NULL && strspn(name, ok) == strlen(name);
}

/* The shares' ids from the reference's other lines ("DEVICE SHAREID"), each on the rebuilt
 * device of that name (a device is in a claim once: dra/prepare.c refuses it twice). */
static void ref_shares(const char *text, json_object *devs)
{
        static const char uid_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-";
        for (const char *l = strchr(text, '\n'); l != NULL; l = strchr(l, '\n')) {
                char dev[64], id[64];
                l++;
                if (sscanf(l, "%63s %63s", dev, id) != 2 || strspn(id, uid_chars) != strlen(id))
                        continue; /* (a UID: it goes into the status the plugin writes) */
                for (size_t i = 0; i < json_object_array_length(devs); i++) {
                        json_object *d = json_object_array_get_idx(devs, i), *v = NULL;
                        if (json_object_object_get_ex(d, "device", &v) && strcmp(json_object_get_string(v), dev) == 0)
                                json_object_object_add(d, "share_id", json_object_new_string(id));
                }
        }
}

/* The createRuntime hook's option `opt` ("--memory=") in a spec device, or NULL. */
static const char *hook_opt(json_object *dev, const char *opt)
{
        json_object *edits = NULL, *hooks = NULL;
        if (!json_object_object_get_ex(dev, "containerEdits", &edits) || !json_object_object_get_ex(edits, "hooks", &hooks) ||
            !json_object_is_type(hooks, json_type_array))
                return NULL;
        for (size_t k = 0; k < json_object_array_length(hooks); k++) {
                json_object *h = json_object_array_get_idx(hooks, k), *name = NULL, *args = NULL;
                if (!json_object_object_get_ex(h, "hookName", &name) || strcmp(json_object_get_string(name), "createRuntime") != 0 ||
                    !json_object_object_get_ex(h, "args", &args) || !json_object_is_type(args, json_type_array))
                        continue;
                for (size_t j = 0; j < json_object_array_length(args); j++) {
                        const char *a = json_object_get_string(json_object_array_get_idx(args, j));
                        if (a != NULL && strncmp(a, opt, strlen(opt)) == 0)
                                return a + strlen(opt);
                }
        }
        return NULL;
}

/* Does a spec device hold the admin view's mount (dra/prepare.h: an admin-access device)? */
static bool admin_mount(json_object *dev)
{
        json_object *edits = NULL, *mounts = NULL;
        if (!json_object_object_get_ex(dev, "containerEdits", &edits) || !json_object_object_get_ex(edits, "mounts", &mounts) ||
            !json_object_is_type(mounts, json_type_array))
                return false;
        for (size_t k = 0; k < json_object_array_length(mounts); k++) {
                json_object *cp = NULL;
                if (json_object_object_get_ex(json_object_array_get_idx(mounts, k), "containerPath", &cp) &&
                    strcmp(json_object_get_string(cp), GS_DRA_ADMIN_VIEW) == 0)
                        return true;
        }
        return false;
}

/* One claim's entry from its spec (NULL: not a spec of ours to read). */
static json_object *entry_from_spec(struct gs_dra_prep *p, const char *uid, const char *path)
{
        json_object *spec = json_object_from_file(path), *devs = NULL;
        if (spec == NULL || !json_object_object_get_ex(spec, "devices", &devs) || !json_object_is_type(devs, json_type_array)) {
                json_object_put(spec);
                return NULL;
        }
        json_object *entry = json_object_new_object(), *out = json_object_new_array();
        size_t ulen = strlen(uid);
        for (size_t i = 0; i < json_object_array_length(devs); i++) {
                json_object *d = json_object_array_get_idx(devs, i), *name = NULL;
                const char *n = json_object_object_get_ex(d, "name", &name) ? json_object_get_string(name) : "";
                if (strncmp(n, uid, ulen) != 0 || n[ulen] != '-' || n[ulen + 1] == '\0')
                        continue;
                json_object *e = json_object_new_object();
                json_object_object_add(e, "device", json_object_new_string(n + ulen + 1));
                json_object_object_add(e, "pool", json_object_new_string(p->node));
                const char *mem = hook_opt(d, "--memory="), *cs = hook_opt(d, "--compute-share=");
                if (mem != NULL) { /* a slice: what it holds, as prepare wrote it (0: not given, all of it) */
                        uint64_t m = 0;
                        struct gs_error e2 = {0};
                        if (gs_k8s_quantity_parse(mem, &m, &e2) < 0)
                                m = 0;
                        json_object_object_add(e, "memory", json_object_new_int64((int64_t)m));
                        json_object_object_add(e, "compute", json_object_new_int(cs != NULL ? atoi(cs) : 0));
                }
                if (admin_mount(d))
                        json_object_object_add(e, "admin", json_object_new_boolean(1));
                json_object_array_add(out, e);
                const char *ns = hook_opt(d, "--k8s-namespace="), *cn = hook_opt(d, "--k8s-claim=");
                if (ns != NULL && cn != NULL) {
                        json_object_object_add(entry, "namespace", json_object_new_string(ns));
                        json_object_object_add(entry, "name", json_object_new_string(cn));
                }
        }
        json_object_put(spec);
        char ns[64], cn[254], ref[REF_MAX];
        bool have_ref = ref_load(p, uid, ref, sizeof(ref));
        if (have_ref && !json_object_object_get_ex(entry, "namespace", NULL) && ref_name(ref, ns, cn)) {
                json_object_object_add(entry, "namespace", json_object_new_string(ns)); /* a whole GPU, a MIG device */
                json_object_object_add(entry, "name", json_object_new_string(cn));
        }
        if (have_ref)
                ref_shares(ref, out);
        json_object_object_add(entry, "spec", json_object_new_string(path));
        json_object_object_add(entry, "rebuilt", json_object_new_boolean(1));
        json_object_object_add(entry, "devices", out);
        return entry;
}

/* The claims' specs in the CDI directory, as checkpoint entries. */
static size_t rebuild(struct gs_dra_prep *p)
{
        char prefix[300];
        size_t n = 0;
        snprintf(prefix, sizeof(prefix), "%s-claim-", p->driver);
        DIR *d = opendir(p->cdi_dir);
        if (d == NULL)
                return 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                size_t len = strlen(de->d_name), pl = strlen(prefix);
                char uid[64], path[PATH_MAX];
                if (len <= pl + 5 || strncmp(de->d_name, prefix, pl) != 0 || strcmp(de->d_name + len - 5, ".json") != 0 ||
                    len - pl - 5 >= sizeof(uid))
                        continue;
                memcpy(uid, de->d_name + pl, len - pl - 5);
                uid[len - pl - 5] = '\0';
                if (strspn(uid, "0123456789abcdefABCDEF-") != strlen(uid))
                        continue;
                snprintf(path, sizeof(path), "%s/%s", p->cdi_dir, de->d_name);
                json_object *e = entry_from_spec(p, uid, path);
                if (e == NULL) {
                        gs_log_warn("checkpoint rebuild: %s is not a spec to read: skipped", path);
                        continue;
                }
                json_object_object_add(p->claims, uid, e);
                n++;
        }
        closedir(d);
        return n;
}

static void corrupt(struct gs_dra_prep *p)
{
        char bad[PATH_MAX + 8], msg[PATH_MAX * 2 + 200];
        snprintf(bad, sizeof(bad), "%s.bad", p->checkpoint);
        rename(p->checkpoint, bad);
        json_object_put(p->claims);
        p->claims = json_object_new_object();
        size_t n = rebuild(p);
        struct gs_error err = {0};
        if (gs_dra_ck_save(p, &err) < 0)
                gs_log_warn("%s", err.msg);
        snprintf(msg, sizeof(msg), "the DRA plugin's checkpoint %s could not be read (set aside as %s): rebuilt from %zu "
                 "claim spec(s) in %s", p->checkpoint, bad, n, p->cdi_dir);
        gs_log_warn("%s", msg);
        p->rebuilt++;
        if (p->api != NULL && gs_dra_event_node(p->api, p->driver, p->node, "CheckpointRebuilt", msg, &err) < 0)
                gs_log_warn("the Event CheckpointRebuilt not written: %s", err.msg);
}

static void load(struct gs_dra_prep *p)
{
        json_object *doc = json_object_from_file(p->checkpoint), *claims = NULL, *ver = NULL;
        if (doc != NULL && json_object_object_get_ex(doc, "version", &ver) && json_object_get_int(ver) == 1 &&
            json_object_object_get_ex(doc, "claims", &claims) && json_object_is_type(claims, json_type_object)) {
                json_object_put(p->claims);
                p->claims = json_object_get(claims);
        } else if (access(p->checkpoint, F_OK) == 0) {
                corrupt(p);
        } else {
                json_object_put(p->claims);
                p->claims = json_object_new_object(); /* none yet, or removed */
        }
        json_object_put(doc);
}

int gs_dra_ck_open(struct gs_dra_prep *p, const char *plugin_dir, struct gs_error *err)
{
        char lock[PATH_MAX];
        p->lock_fd = -1;
        if ((size_t)snprintf(p->checkpoint, sizeof(p->checkpoint), "%s/checkpoint.json", plugin_dir) >= sizeof(p->checkpoint) ||
            (size_t)snprintf(lock, sizeof(lock), "%s/checkpoint.lock", plugin_dir) >= sizeof(lock))
                return gs_error_set(err, GS_EINVAL, "plugin directory path too long");
        p->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (p->lock_fd < 0)
                return gs_error_sys(err, "open %s", lock);
        p->claims = json_object_new_object();
        if (p->claims == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        while (flock(p->lock_fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return gs_error_sys(err, "lock the checkpoint");
        load(p);
        gs_log_info("checkpoint %s: %d prepared claim(s)", p->checkpoint, json_object_object_length(p->claims));
        gs_dra_ck_end(p);
        return 0;
}

void gs_dra_ck_close(struct gs_dra_prep *p)
{
        if (p->lock_fd >= 0)
                close(p->lock_fd);
        p->lock_fd = -1;
        json_object_put(p->claims);
        p->claims = NULL;
}

int gs_dra_ck_begin(struct gs_dra_prep *p, struct gs_error *err)
{
        while (flock(p->lock_fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return gs_error_sys(err, "lock the checkpoint");
        load(p); /* what another instance wrote since */
        return 0;
}

void gs_dra_ck_end(struct gs_dra_prep *p)
{
        flock(p->lock_fd, LOCK_UN);
}

void gs_dra_ck_held(const struct gs_dra_prep *p, const char *device, const char *except_uid, uint64_t total,
                    uint64_t *memory, unsigned *compute)
{
        *memory = 0;
        *compute = 0;
        json_object_object_foreach(p->claims, uid, entry) {
                json_object *devs = NULL;
                if (strcmp(uid, except_uid) == 0 || !json_object_object_get_ex(entry, "devices", &devs) ||
                    !json_object_is_type(devs, json_type_array))
                        continue;
                for (size_t i = 0; i < json_object_array_length(devs); i++) {
                        json_object *d = json_object_array_get_idx(devs, i), *v = NULL, *m = NULL, *c = NULL;
                        if (!json_object_object_get_ex(d, "device", &v) || strcmp(json_object_get_string(v), device) != 0 ||
                            (json_object_object_get_ex(d, "admin", &m) && json_object_get_boolean(m)))
                                continue; /* (an admin-access view holds nothing) */
                        uint64_t mem = json_object_object_get_ex(d, "memory", &m) ? (uint64_t)json_object_get_int64(m) : 0;
                        int cs = json_object_object_get_ex(d, "compute", &c) ? json_object_get_int(c) : 0;
                        *memory += mem == 0 || mem > total ? total : mem;
                        *compute += cs <= 0 || cs > 100 ? 100 : (unsigned)cs;
                }
        }
}
