/*
 * Mounting into a hostile container rootfs, by fd, with rollback (see mount.h).
 *
 * Shape of every operation:
 *
 *   1. the source (bind mounts) is opened O_PATH|O_NOFOLLOW through its parent directory, its
 *      type checked on that fd, and the fd walked up ("..", fd by fd) to make sure the rootfs is
 *      not one of its ancestors;
 *   2. the destination's parent is canonicalised inside the rootfs (gs_path_resolve: symlinks
 *      re-rooted, ".." clamped, a missing tail allowed) and opened with openat2(RESOLVE_IN_ROOT |
 *      RESOLVE_NO_MAGICLINKS) (gs_open_in_root); if it is missing, a walk from the rootfs fd opens
 *      each component O_PATH|O_NOFOLLOW|O_DIRECTORY and creates the missing ones with mkdirat() on
 *      the parent fd, as the owner's fsuid/fsgid (a symlink appearing meanwhile is ENOTDIR);
 *   3. the final node is created (or an existing one of the right type reused) relative to that
 *      parent fd with O_CREAT|O_EXCL|O_NOFOLLOW / mkdirat, and opened O_PATH|O_NOFOLLOW;
 *   4. the mount goes onto that fd: open_tree(OPEN_TREE_CLONE) of the source fd (or fsopen/fsmount
 *      for a tmpfs), mount_setattr() on the detached mount, move_mount() onto the destination fd;
 *      else mount(2) from/to /proc/self/fd/N and a MS_BIND|MS_REMOUNT on a fresh fd of the new
 *      mount;
 *   5. a fresh lookup of the destination (from the parent fd) must show the source inode (a tmpfs),
 *      on the new mount, with the requested flags.
 *
 * The journal keeps an fd per mount we made, on which umount2("/proc/self/fd/N", MNT_DETACH)
 * unmounts exactly that mount whatever happened to the paths since: the new mount itself
 * (open_tree/fsmount), or with mount(2) the node it covers (umount follows the mount stacked on
 * the end of its path). For each node we created it keeps the canonical in-root path and an
 * identity (dev, ino, birth time, file handle with the inode generation where the filesystem has
 * one): the undo re-resolves the parent in-root and removes the node only if it is still the one
 * we created. A failed call undoes its own steps before returning.
 *
 * Not thread-safe per gs_rootfs; setfsuid/setfsgid are per-thread in Linux (glibc does not
 * broadcast them), so only the calling thread changes credentials, for the duration of one
 * syscall.
 */
#include "container/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/path.h"

/* The new mount API (Linux 5.2; mount_setattr 5.12). Numbers are the same on every architecture. */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#define GS_FSOPEN_CLOEXEC 1u
#define GS_FSCONFIG_SET_FLAG 0u
#define GS_FSCONFIG_SET_STRING 1u
#define GS_FSCONFIG_CMD_CREATE 6u
#define GS_FSMOUNT_CLOEXEC 1u
#define GS_AT_HANDLE_FID 0x200 /* Linux 6.5: a handle to identify, not to open (works on overlayfs) */
#define GS_OPEN_TREE_CLONE 1u
#define GS_MOVE_MOUNT_F_EMPTY_PATH 0x00000004u
#define GS_MOVE_MOUNT_T_EMPTY_PATH 0x00000040u
#define GS_MOUNT_ATTR_RDONLY 0x00000001ull
#define GS_MOUNT_ATTR_NOSUID 0x00000002ull
#define GS_MOUNT_ATTR_NODEV 0x00000004ull
#define GS_MOUNT_ATTR_NOEXEC 0x00000008ull

struct gs_mount_attr_v0 {
        uint64_t attr_set;
        uint64_t attr_clr;
        uint64_t propagation;
        uint64_t userns_fd;
};

/* The only per-mount flags callers may ask for (MS_BIND/MS_REMOUNT are implied and ignored). */
#define GS_MNT_ALLOWED (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)

#define GS_RETRIES 8
#define GS_MAX_WALK_UP 4096

static bool force_legacy;

void gs_mount_force_legacy(bool on) { force_legacy = on; }

/* ------------------------------------------------------------------------------------------ */
/* Journal */

enum jtype { J_MOUNT, J_DIR, J_FILE, J_SYMLINK };

/* Who a node is: an inode number can be reused as soon as the inode is freed, so the birth time
 * and the file handle (which carries the inode generation) are compared too where available. */
struct node_id {
        dev_t dev;
        ino_t ino;
        bool has_btime;
        int64_t btime_sec;
        uint32_t btime_nsec;
        int htype; /* -1: no handle */
        unsigned hlen;
        unsigned char h[MAX_HANDLE_SZ];
};

struct jentry {
        enum jtype type;
        int fd;           /* J_MOUNT: umount2("/proc/self/fd/<fd>") undoes it */
        struct node_id id; /* created nodes */
        char *path;       /* created nodes: canonical in-root path; J_MOUNT: destination, for messages */
};

struct gs_mount_journal {
        struct jentry *v;
        size_t n, cap;
};

static size_t journal_len(const struct gs_rootfs *r) { return r->journal != NULL ? r->journal->n : 0; }

/* Make room for `extra` entries so that journal_push() cannot fail after the fact. */
static int journal_reserve(struct gs_rootfs *r, size_t extra, struct gs_error *err)
{
        if (r->journal == NULL) {
                r->journal = calloc(1, sizeof(*r->journal));
                if (r->journal == NULL)
                        return gs_error_set(err, GS_ENOMEM, "out of memory");
        }
        struct gs_mount_journal *j = r->journal;
        if (j->n + extra <= j->cap)
                return 0;
        size_t cap = j->cap != 0 ? j->cap * 2 : 16;
        while (cap < j->n + extra)
                cap *= 2;
        struct jentry *v = realloc(j->v, cap * sizeof(*v));
        if (v == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        j->v = v;
        j->cap = cap;
        return 0;
}

static void journal_push(struct gs_rootfs *r, enum jtype type, int fd, const struct node_id *id, char *path)
{
        struct gs_mount_journal *j = r->journal; /* reserved: non-NULL, n < cap */
        struct jentry *e = &j->v[j->n++];
        memset(e, 0, sizeof(*e));
        e->type = type;
        e->fd = fd;
        if (id != NULL)
                e->id = *id;
        e->path = path;
}

/* Identity of `name` in `dirfd` (never following a final symlink), or of `dirfd` itself if name is "". */
static int node_id_get(int dirfd, const char *name, struct node_id *id)
{
        int at = name[0] == '\0' ? AT_EMPTY_PATH : 0;
        struct statx stx;
        memset(id, 0, sizeof(*id));
        id->htype = -1;
        if (statx(dirfd, name, at | AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &stx) < 0)
                return -1;
        id->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        id->ino = stx.stx_ino;
        if (stx.stx_mask & STATX_BTIME) {
                id->has_btime = true;
                id->btime_sec = stx.stx_btime.tv_sec;
                id->btime_nsec = stx.stx_btime.tv_nsec;
        }
        union {
                struct file_handle fh;
                char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
        } u;
        int mnt;
        u.fh.handle_bytes = MAX_HANDLE_SZ;
        int rc = name_to_handle_at(dirfd, name, &u.fh, &mnt, at | GS_AT_HANDLE_FID);
        if (rc < 0 && errno == EINVAL) { /* before 6.5 */
                u.fh.handle_bytes = MAX_HANDLE_SZ;
                rc = name_to_handle_at(dirfd, name, &u.fh, &mnt, at);
        }
        if (rc == 0 && u.fh.handle_bytes <= MAX_HANDLE_SZ) {
                id->htype = u.fh.handle_type;
                id->hlen = u.fh.handle_bytes;
                memcpy(id->h, u.fh.f_handle, u.fh.handle_bytes);
        }
        return 0;
}

static bool same_node(const struct node_id *a, const struct node_id *b)
{
        if (a->dev != b->dev || a->ino != b->ino)
                return false;
        if (a->has_btime && b->has_btime && (a->btime_sec != b->btime_sec || a->btime_nsec != b->btime_nsec))
                return false;
        if (a->htype >= 0 && b->htype >= 0 &&
            (a->htype != b->htype || a->hlen != b->hlen || memcmp(a->h, b->h, a->hlen) != 0))
                return false;
        return true;
}

/* Split a path into its parent ("/" if none) and last component. -1 if the last component is
 * empty, "." or "..", or if something does not fit. */
static int split_path(const char *path, char *parent, size_t plen, char *name, size_t nlen)
{
        char buf[PATH_MAX];
        size_t n = strlen(path);
        if (n == 0 || n >= sizeof(buf))
                return -1;
        memcpy(buf, path, n + 1);
        while (n > 1 && buf[n - 1] == '/')
                buf[--n] = '\0';
        char *slash = strrchr(buf, '/');
        const char *base = slash != NULL ? slash + 1 : buf;
        if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strlen(base) >= nlen)
                return -1;
        snprintf(name, nlen, "%s", base);
        if (slash == NULL || slash == buf) {
                snprintf(parent, plen, "/");
        } else {
                *slash = '\0';
                if (strlen(buf) >= plen)
                        return -1;
                snprintf(parent, plen, "%s", buf);
        }
        return 0;
}

static void undo_entry(struct gs_rootfs *r, struct jentry *e)
{
        if (e->type == J_MOUNT) {
                char proc[64];
                snprintf(proc, sizeof(proc), "/proc/self/fd/%d", e->fd);
                if (umount2(proc, MNT_DETACH) < 0)
                        gs_log_warn("rollback: umount %s: %s", e->path != NULL ? e->path : "?", strerror(errno));
                close(e->fd);
                e->fd = -1;
                return;
        }
        char parent[PATH_MAX], name[NAME_MAX + 1];
        if (e->path == NULL || r->fd < 0 || split_path(e->path, parent, sizeof(parent), name, sizeof(name)) < 0)
                return;
        struct gs_error ign = {0};
        int pfd = -1;
        for (int i = 0; i < GS_RETRIES && pfd < 0; i++) {
                pfd = gs_open_in_root(r->fd, parent, O_PATH | O_DIRECTORY, &ign);
                if (pfd < 0 && ign.sys_errno != EAGAIN)
                        break;
        }
        if (pfd < 0) {
                gs_log_warn("rollback: %s: parent gone (%s)", e->path, ign.msg);
                return;
        }
        struct node_id now;
        if (node_id_get(pfd, name, &now) == 0 && same_node(&now, &e->id)) {
                if (unlinkat(pfd, name, e->type == J_DIR ? AT_REMOVEDIR : 0) < 0)
                        gs_log_warn("rollback: remove %s: %s", e->path, strerror(errno));
        } else {
                gs_log_warn("rollback: %s is no longer the node we created; left alone", e->path);
        }
        close(pfd);
}

static void entry_free(struct jentry *e)
{
        if (e->type == J_MOUNT && e->fd >= 0)
                close(e->fd);
        e->fd = -1;
        free(e->path);
        e->path = NULL;
}

/* Undo (newest first) everything journalled after `mark`. */
static void rollback_to(struct gs_rootfs *r, size_t mark)
{
        struct gs_mount_journal *j = r->journal;
        if (j == NULL)
                return;
        int saved = errno;
        while (j->n > mark) {
                struct jentry *e = &j->v[--j->n];
                undo_entry(r, e);
                entry_free(e);
        }
        errno = saved;
}

static void journal_free(struct gs_rootfs *r)
{
        struct gs_mount_journal *j = r->journal;
        if (j == NULL)
                return;
        for (size_t i = 0; i < j->n; i++)
                entry_free(&j->v[i]);
        free(j->v);
        free(j);
        r->journal = NULL;
}

void gs_mount_rollback(struct gs_rootfs *r)
{
        if (r == NULL)
                return;
        rollback_to(r, 0);
        journal_free(r);
}

void gs_mount_commit(struct gs_rootfs *r)
{
        if (r != NULL)
                journal_free(r);
}

/* ------------------------------------------------------------------------------------------ */
/* Rootfs */

int gs_rootfs_open(struct gs_rootfs *r, const char *path, uid_t uid, gid_t gid, struct gs_error *err)
{
        if (r == NULL)
                return gs_error_set(err, GS_EINVAL, "invalid argument: no rootfs");
        memset(r, 0, sizeof(*r));
        r->fd = -1;
        if (path == NULL || path[0] == '\0')
                return gs_error_set(err, GS_EINVAL, "invalid rootfs path");
        if (strlen(path) >= sizeof(r->path))
                return gs_error_set(err, GS_EINVAL, "rootfs path too long: %.64s...", path);
        int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                gs_error_sys(err, "open rootfs %s", path);
                if (err != NULL && errno == ENOENT)
                        err->code = GS_ENOTFOUND;
                return -1;
        }
        r->fd = fd;
        snprintf(r->path, sizeof(r->path), "%s", path);
        r->uid = uid;
        r->gid = gid;
        r->journal = NULL;
        return 0;
}

void gs_rootfs_close(struct gs_rootfs *r)
{
        if (r == NULL)
                return;
        journal_free(r); /* neither committed nor rolled back: keep what was done, free the record */
        if (r->fd >= 0)
                close(r->fd);
        r->fd = -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Helpers */

struct fscreds {
        uid_t uid;
        gid_t gid;
        bool changed;
};

/* Switch this thread's fsuid/fsgid to the container owner (no-op if already). */
static int owner_enter(const struct gs_rootfs *r, struct fscreds *saved, struct gs_error *err)
{
        saved->changed = false;
        saved->uid = (uid_t)setfsuid((uid_t)-1);
        saved->gid = (gid_t)setfsgid((gid_t)-1);
        if (saved->uid == r->uid && saved->gid == r->gid)
                return 0;
        setfsgid(r->gid);
        if ((gid_t)setfsgid((gid_t)-1) != r->gid)
                return gs_error_set(err, GS_ESYS, "cannot switch to fsgid %u", (unsigned)r->gid);
        setfsuid(r->uid);
        if ((uid_t)setfsuid((uid_t)-1) != r->uid) {
                setfsgid(saved->gid);
                return gs_error_set(err, GS_ESYS, "cannot switch to fsuid %u", (unsigned)r->uid);
        }
        saved->changed = true;
        return 0;
}

static void owner_leave(const struct fscreds *saved)
{
        if (!saved->changed)
                return;
        int e = errno;
        setfsuid(saved->uid); /* first: back to 0 re-raises the fs capabilities */
        setfsgid(saved->gid);
        errno = e;
}

/* Room for one more journal entry, the entry's copy of `path`, then act as the container owner
 * (the caller calls owner_leave). 0, or -1 with nothing held. */
static int journal_enter(struct gs_rootfs *r, const char *path, char **jp, struct fscreds *c,
                         struct gs_error *err)
{
        if (journal_reserve(r, 1, err) < 0)
                return -1;
        if ((*jp = strdup(path)) == NULL)
                return gs_error_set(err, GS_ENOMEM, "out of memory");
        if (owner_enter(r, c, err) < 0) {
                free(*jp);
                *jp = NULL;
                return -1;
        }
        return 0;
}

static int mnt_id_of(int fd, uint64_t *id)
{
        struct statx stx;
        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) == 0 &&
            (stx.stx_mask & STATX_MNT_ID) != 0) {
                *id = stx.stx_mnt_id;
                return 0;
        }
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
        gs_autofclose FILE *f = fopen(p, "re");
        if (f == NULL)
                return -1;
        char line[256];
        while (fgets(line, sizeof(line), f) != NULL) {
                unsigned long long v;
                if (sscanf(line, "mnt_id: %llu", &v) == 1) {
                        *id = v;
                        return 0;
                }
        }
        errno = ENOTSUP;
        return -1;
}

static const char *mode_name(mode_t m)
{
        switch (m & S_IFMT) {
        case S_IFREG: return "a regular file";
        case S_IFDIR: return "a directory";
        case S_IFCHR: return "a character device";
        case S_IFBLK: return "a block device";
        case S_IFSOCK: return "a socket";
        case S_IFIFO: return "a fifo";
        case S_IFLNK: return "a symbolic link";
        default: return "an unknown file type";
        }
}

static const char *kind_name(enum gs_node_kind k)
{
        switch (k) {
        case GS_NODE_FILE: return "a regular file";
        case GS_NODE_DIR: return "a directory";
        case GS_NODE_CHAR: return "a character device";
        case GS_NODE_SOCKET: return "a socket";
        }
        return "?";
}

static bool kind_valid(int k) { return k >= GS_NODE_FILE && k <= GS_NODE_SOCKET; }

static bool source_ok(enum gs_node_kind k, mode_t m)
{
        switch (k) {
        case GS_NODE_FILE: return S_ISREG(m);
        case GS_NODE_DIR: return S_ISDIR(m);
        case GS_NODE_CHAR: return S_ISCHR(m);
        case GS_NODE_SOCKET: return S_ISSOCK(m);
        }
        return false;
}

/* An existing destination we may mount onto: same type, or for devices/sockets the regular file
 * we would have created as the bind target. */
static bool target_ok(enum gs_node_kind k, mode_t m)
{
        switch (k) {
        case GS_NODE_FILE: return S_ISREG(m);
        case GS_NODE_DIR: return S_ISDIR(m);
        case GS_NODE_CHAR: return S_ISCHR(m) || S_ISREG(m);
        case GS_NODE_SOCKET: return S_ISSOCK(m) || S_ISREG(m);
        }
        return false;
}

static int exists_error(struct gs_error *err, const char *dst, mode_t found, enum gs_node_kind want)
{
        if (S_ISLNK(found))
                gs_error_set(err, GS_ESYS, "file creation failed: %s: file exists (a symbolic link)", dst);
        else
                gs_error_set(err, GS_ESYS, "file creation failed: %s: file exists (%s, expected %s)", dst,
                             mode_name(found), kind_name(want));
        if (err != NULL)
                err->sys_errno = EEXIST;
        return -1;
}

static int open_in_root_retry(int rootfd, const char *path, int flags, struct gs_error *err)
{
        for (int i = 0;; i++) {
                int fd = gs_open_in_root(rootfd, path, flags, err);
                if (fd >= 0 || err == NULL || err->sys_errno != EAGAIN || i >= GS_RETRIES)
                        return fd;
        }
}

/* Is the directory `start` the rootfs or below it? Walks up with ".." fd by fd, to the process root
 * (the directory whose ".." is itself, on the same mount). */
static int below_rootfs(const struct gs_rootfs *r, int start, bool *inside, struct gs_error *err)
{
        struct stat rst;
        if (fstat(r->fd, &rst) < 0)
                return gs_error_sys(err, "stat rootfs %s", r->path);
        gs_autoclose int cur = openat(start, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return gs_error_sys(err, "open source directory");
        for (int i = 0; i < GS_MAX_WALK_UP; i++) {
                struct stat st, ust;
                if (fstat(cur, &st) < 0)
                        return gs_error_sys(err, "stat source ancestor");
                if (st.st_dev == rst.st_dev && st.st_ino == rst.st_ino) {
                        *inside = true;
                        return 0;
                }
                gs_autoclose int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (up < 0 || fstat(up, &ust) < 0)
                        return gs_error_sys(err, "open source ancestor");
                if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino) {
                        uint64_t a, b;
                        if (mnt_id_of(cur, &a) < 0 || mnt_id_of(up, &b) < 0)
                                return gs_error_sys(err, "mount id of source ancestor");
                        if (a == b) { /* the root */
                                *inside = false;
                                return 0;
                        }
                }
                close(cur);
                cur = gs_steal_fd(&up);
        }
        return gs_error_set(err, GS_EINVAL, "source path too deep");
}

/* Open the bind source O_PATH|O_NOFOLLOW and check it (type, not a symlink, not in the rootfs). */
static int open_source(const struct gs_rootfs *r, const char *src, enum gs_node_kind kind, struct stat *st,
                       struct gs_error *err)
{
        if (src[0] != '/')
                return gs_error_set(err, GS_EINVAL, "invalid source %s: not an absolute path", src);
        char dir[PATH_MAX], base[NAME_MAX + 1];
        if (split_path(src, dir, sizeof(dir), base, sizeof(base)) < 0) {
                /* "/", "/x/.", "/x/..": open it as a directory */
                if (strlen(src) >= sizeof(dir))
                        return gs_error_set(err, GS_EINVAL, "invalid source %s: path too long", src);
                snprintf(dir, sizeof(dir), "%s", src);
                snprintf(base, sizeof(base), ".");
        }
        gs_autoclose int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return gs_error_sys(err, "invalid source %s", src);
        gs_autoclose int fd = openat(dfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return gs_error_sys(err, "invalid source %s", src);
        if (fstat(fd, st) < 0)
                return gs_error_sys(err, "invalid source %s", src);
        if (S_ISLNK(st->st_mode))
                return gs_error_set(err, GS_EINVAL, "unexpected source file mode: %s: a symbolic link", src);
        if (!source_ok(kind, st->st_mode))
                return gs_error_set(err, GS_EINVAL, "unexpected source file mode: %s: %s, expected %s", src,
                                    mode_name(st->st_mode), kind_name(kind));
        bool inside = false;
        if (below_rootfs(r, S_ISDIR(st->st_mode) ? fd : dfd, &inside, err) < 0)
                return gs_error_wrap(err, "invalid source %s", src);
        if (inside)
                return gs_error_set(err, GS_EINVAL, "invalid source %s: inside the container rootfs %s", src,
                                    r->path);
        return gs_steal_fd(&fd);
}

/* Create the missing directories of the canonical in-root path `canon` (a walk from the rootfs fd,
 * one O_PATH|O_NOFOLLOW|O_DIRECTORY component at a time) and return an fd on it. */
static int create_parents(struct gs_rootfs *r, const char *canon, const char *dst, struct gs_error *err)
{
        gs_autoclose int cur = openat(r->fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return gs_error_sys(err, "open rootfs %s", r->path);
        char prefix[PATH_MAX];
        size_t plen = 0;
        prefix[0] = '\0';
        const char *p = canon;
        for (;;) {
                while (*p == '/')
                        p++;
                if (*p == '\0')
                        break;
                size_t n = strcspn(p, "/");
                char name[NAME_MAX + 1];
                if (n > NAME_MAX || plen + 1 + n >= sizeof(prefix))
                        return gs_error_set(err, GS_EINVAL, "path error: %s: too long", dst);
                memcpy(name, p, n);
                name[n] = '\0';
                p += n;
                prefix[plen++] = '/';
                memcpy(prefix + plen, name, n + 1);
                plen += n;

                int next = -1;
                for (int attempt = 0; next < 0; attempt++) {
                        if (attempt >= GS_RETRIES)
                                return gs_error_set(err, GS_ESYS, "file creation failed: %s: %s keeps changing",
                                                    dst, prefix);
                        next = openat(cur, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
                        if (next >= 0)
                                break;
                        if (errno != ENOENT) /* ENOTDIR: a file or a symlink appeared here */
                                return gs_error_sys(err, "file creation failed: %s: %s", dst, prefix);
                        char *jpath;
                        struct fscreds c;
                        if (journal_enter(r, prefix, &jpath, &c, err) < 0)
                                return -1;
                        int rc = mkdirat(cur, name, 0755);
                        owner_leave(&c);
                        if (rc < 0) {
                                free(jpath);
                                if (errno == EEXIST)
                                        continue;
                                return gs_error_sys(err, "file creation failed: %s: mkdir %s", dst, prefix);
                        }
                        struct node_id id;
                        int dfd = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (dfd < 0 || node_id_get(dfd, "", &id) < 0) {
                                free(jpath);
                                if (dfd >= 0)
                                        close(dfd);
                                return gs_error_sys(err, "file creation failed: %s: open %s", dst, prefix);
                        }
                        journal_push(r, J_DIR, -1, &id, jpath);
                        if (fchmod(dfd, 0755) < 0) {
                                close(dfd);
                                return gs_error_sys(err, "file creation failed: %s: chmod %s", dst, prefix);
                        }
                        next = dfd;
                }
                close(cur);
                cur = next;
        }
        return gs_steal_fd(&cur);
}

/* An fd on the destination's parent directory inside the rootfs, created if missing; its canonical
 * in-root path goes to `canon` (the journal's name for what is created in it). */
static int open_parent(struct gs_rootfs *r, const char *parent, const char *dst, char *canon, size_t clen,
                       struct gs_error *err)
{
        if (gs_path_resolve(r->fd, parent, canon, clen, true, NULL, err) < 0)
                return gs_error_wrap(err, "path error: %s", dst);
        struct gs_error e = {0};
        int fd = open_in_root_retry(r->fd, canon, O_PATH | O_DIRECTORY, &e);
        if (fd >= 0)
                return fd;
        if (e.sys_errno == ENOENT)
                return create_parents(r, canon, dst, err);
        if (err != NULL) {
                *err = e;
                gs_error_wrap(err, "file creation failed: %s", dst);
        }
        return -1;
}

/* Create (or reuse) the final node `name` in `pfd` for a mount of `kind`; returns an O_PATH fd. */
static int make_node(struct gs_rootfs *r, int pfd, const char *name, const char *jpath_in, const char *dst,
                     enum gs_node_kind kind, mode_t perm, struct gs_error *err)
{
        for (int attempt = 0; attempt < GS_RETRIES; attempt++) {
                int fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0) {
                        struct stat st;
                        if (fstat(fd, &st) < 0) {
                                close(fd);
                                return gs_error_sys(err, "file creation failed: %s", dst);
                        }
                        if (target_ok(kind, st.st_mode))
                                return fd;
                        close(fd);
                        return exists_error(err, dst, st.st_mode, kind);
                }
                if (errno != ENOENT)
                        return gs_error_sys(err, "file creation failed: %s", dst);

                char *jpath;
                struct fscreds c;
                if (journal_enter(r, jpath_in, &jpath, &c, err) < 0)
                        return -1;
                int cfd;
                if (kind == GS_NODE_DIR) {
                        cfd = mkdirat(pfd, name, perm);
                } else {
                        /* files, and the regular file that a device node or socket is bound onto */
                        cfd = openat(pfd, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, perm);
                }
                owner_leave(&c);
                if (cfd < 0) {
                        free(jpath);
                        if (errno == EEXIST)
                                continue; /* raced: look again */
                        return gs_error_sys(err, "file creation failed: %s", dst);
                }
                if (kind == GS_NODE_DIR)
                        cfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                struct node_id id, id2;
                if (cfd < 0 || node_id_get(cfd, "", &id) < 0) {
                        free(jpath);
                        if (cfd >= 0)
                                close(cfd);
                        return gs_error_sys(err, "file creation failed: %s", dst);
                }
                journal_push(r, kind == GS_NODE_DIR ? J_DIR : J_FILE, -1, &id, jpath);
                int rc = fchmod(cfd, perm);
                close(cfd);
                if (rc < 0)
                        return gs_error_sys(err, "file creation failed: %s: chmod", dst);
                fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || node_id_get(fd, "", &id2) < 0) {
                        if (fd >= 0)
                                close(fd);
                        return gs_error_sys(err, "file creation failed: %s", dst);
                }
                if (!same_node(&id, &id2)) {
                        close(fd);
                        return gs_error_set(err, GS_ESYS, "file creation failed: %s: replaced while being created",
                                            dst);
                }
                return fd;
        }
        return gs_error_set(err, GS_ESYS, "file creation failed: %s: keeps changing", dst);
}

/* Common prologue of the in-root operations: split dst, resolve/create its parent; the canonical
 * in-root path of dst goes to jpath. */
static int prepare_dst(struct gs_rootfs *r, const char *dst, char *name, size_t nlen, char *jpath, size_t jlen,
                       struct gs_error *err)
{
        char parent[PATH_MAX], canon[PATH_MAX];
        if (split_path(dst, parent, sizeof(parent), name, nlen) < 0)
                return gs_error_set(err, GS_EINVAL, "invalid destination path: %s", dst);
        int fd = open_parent(r, parent, dst, canon, sizeof(canon), err);
        if (fd < 0)
                return -1;
        if (gs_path_join(jpath, jlen, canon, name, err) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

static bool rootfs_ok(const struct gs_rootfs *r) { return r != NULL && r->fd >= 0; }

static uint64_t ms_to_attr(unsigned long flags)
{
        uint64_t a = 0;
        if (flags & MS_RDONLY)
                a |= GS_MOUNT_ATTR_RDONLY;
        if (flags & MS_NOSUID)
                a |= GS_MOUNT_ATTR_NOSUID;
        if (flags & MS_NODEV)
                a |= GS_MOUNT_ATTR_NODEV;
        if (flags & MS_NOEXEC)
                a |= GS_MOUNT_ATTR_NOEXEC;
        return a;
}

/* MS_BIND|MS_REMOUNT the mount at `mfd` with `flags` plus the restrictions the source's mount already
 * has (a bind remount replaces the per-mount flags; never lift one, which would also be EPERM on a
 * locked mount). Atime flags are preserved by the kernel. */
static int remount_fd(int mfd, int sfd, unsigned long flags, const char *dst, struct gs_error *err)
{
        unsigned long keep = 0;
        struct statvfs sv;
        if (fstatvfs(sfd, &sv) == 0)
                keep = sv.f_flag & (ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC); /* same bits as MS_* */
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fd/%d", mfd);
        if (mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | flags | keep, NULL) < 0)
                return gs_error_sys(err, "mount operation failed: remount %s", dst);
        return 0;
}

/* umount2 on /proc/self/fd/N, MNT_DETACH: with N on a mount's root, that mount; with N on the
 * node a mount covers, the mount stacked on it. */
static int umount_fd(int fd)
{
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
        return umount2(p, MNT_DETACH);
}

_Static_assert((int)ST_RDONLY == (int)MS_RDONLY && (int)ST_NOSUID == (int)MS_NOSUID &&
                       (int)ST_NODEV == (int)MS_NODEV && (int)ST_NOEXEC == (int)MS_NOEXEC,
               "statvfs flags and mount flags differ");

/* After mount(2) onto /proc/self/fd/<dfd>: find the new mount by name from the parent fd and make
 * sure it is ours (a new mount, of the source if given, of a tmpfs otherwise); if it is not
 * (the node was renamed meanwhile), undo through dfd and fail. Returns an O_PATH fd on it. */
static int legacy_find_mount(int dfd, int pfd, const char *name, const struct stat *sst, uint64_t pre_id,
                             const char *dst, struct gs_error *err)
{
        gs_autoclose int mfd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        struct statfs sfs;
        uint64_t id = 0;
        if (mfd < 0 || fstat(mfd, &st) < 0 || fstatfs(mfd, &sfs) < 0 || mnt_id_of(mfd, &id) < 0) {
                gs_error_sys(err, "mount operation failed: %s: reopen", dst);
                umount_fd(dfd);
                return -1;
        }
        bool ours = id != pre_id &&
                    (sst != NULL ? st.st_dev == sst->st_dev && st.st_ino == sst->st_ino
                                 : S_ISDIR(st.st_mode) && sfs.f_type == TMPFS_MAGIC);
        if (!ours) {
                umount_fd(dfd);
                return gs_error_set(err, GS_ESYS, "mount verification failed: %s: the node was replaced during the mount",
                                    dst);
        }
        return gs_steal_fd(&mfd);
}

/* Bind the source `sfd` (stat `sst`) onto `*dfd` (the node `name` in `pfd`, on mount `pre_id`) and
 * apply `flags`. Returns the journal fd for the mount (the caller's *dfd may be taken for it) and
 * the mount id that a lookup of the destination must now show. */
static int attach_bind(int sfd, const struct stat *sst, int *dfd, uint64_t pre_id, int pfd, const char *name,
                       unsigned long flags, const char *src, const char *dst, uint64_t *new_id,
                       struct gs_error *err)
{
        if (!force_legacy) {
                /* Clone the source mount (non-recursive, like MS_BIND) into a detached tree, set its
                 * flags while nobody can see it, and attach it onto the destination fd. */
                gs_autoclose int tfd = (int)syscall(SYS_open_tree, sfd, "", GS_OPEN_TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH);
                if (tfd < 0 && errno != ENOSYS && errno != EPERM)
                        return gs_error_sys(err, "mount operation failed: %s (from %s): open_tree", dst, src);
                if (tfd >= 0) {
                        bool need_remount = false;
                        struct gs_mount_attr_v0 attr = {.attr_set = ms_to_attr(flags)};
                        if (attr.attr_set != 0 &&
                            syscall(SYS_mount_setattr, tfd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
                                if (errno != ENOSYS)
                                        return gs_error_sys(err, "mount operation failed: %s: mount_setattr", dst);
                                need_remount = true; /* Linux 5.2 .. 5.11 */
                        }
                        if (syscall(SYS_move_mount, tfd, "", *dfd, "",
                                    GS_MOVE_MOUNT_F_EMPTY_PATH | GS_MOVE_MOUNT_T_EMPTY_PATH) < 0)
                                return gs_error_sys(err, "mount operation failed: %s (from %s)", dst, src);
                        if (need_remount && remount_fd(tfd, sfd, flags, dst, err) < 0) {
                                umount_fd(tfd);
                                return -1;
                        }
                        if (mnt_id_of(tfd, new_id) < 0) {
                                gs_error_sys(err, "mount operation failed: %s: mount id", dst);
                                umount_fd(tfd);
                                return -1;
                        }
                        return gs_steal_fd(&tfd);
                }
                /* ENOSYS (or EPERM from a seccomp filter that hides it): mount(2) below */
        }

        char sp[64], dp[64];
        snprintf(sp, sizeof(sp), "/proc/self/fd/%d", sfd);
        snprintf(dp, sizeof(dp), "/proc/self/fd/%d", *dfd);
        if (mount(sp, dp, NULL, MS_BIND, NULL) < 0)
                return gs_error_sys(err, "mount operation failed: %s (from %s)", dst, src);
        gs_autoclose int mfd = legacy_find_mount(*dfd, pfd, name, sst, pre_id, dst, err);
        if (mfd < 0)
                return -1;
        if (flags != 0 && remount_fd(mfd, sfd, flags, dst, err) < 0) {
                umount_fd(*dfd);
                return -1;
        }
        if (mnt_id_of(mfd, new_id) < 0) {
                gs_error_sys(err, "mount operation failed: %s: mount id", dst);
                umount_fd(*dfd);
                return -1;
        }
        return gs_steal_fd(dfd); /* the covered node: umount through it takes our mount */
}

/* A detached tmpfs (fsopen/fsconfig/fsmount). -1 with *unsupported set where the kernel lacks the
 * new mount API. */
static int tmpfs_fsmount(const char *options, unsigned long flags, const char *dst, bool *unsupported,
                         struct gs_error *err)
{
        *unsupported = false;
        gs_autoclose int fs = (int)syscall(SYS_fsopen, "tmpfs", GS_FSOPEN_CLOEXEC);
        if (fs < 0) {
                if (errno == ENOSYS || errno == EPERM) {
                        *unsupported = true;
                        return -1;
                }
                return gs_error_sys(err, "mount operation failed: tmpfs on %s: fsopen", dst);
        }
        if (options != NULL && options[0] != '\0') {
                char buf[1024];
                if (strlen(options) >= sizeof(buf))
                        return gs_error_set(err, GS_EINVAL, "mount operation failed: tmpfs on %s: options too long", dst);
                snprintf(buf, sizeof(buf), "%s", options);
                char *save = NULL;
                for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
                        char *eq = strchr(tok, '=');
                        long rc;
                        if (eq != NULL) {
                                *eq = '\0';
                                rc = syscall(SYS_fsconfig, fs, GS_FSCONFIG_SET_STRING, tok, eq + 1, 0);
                        } else {
                                rc = syscall(SYS_fsconfig, fs, GS_FSCONFIG_SET_FLAG, tok, NULL, 0);
                        }
                        if (rc < 0)
                                return gs_error_sys(err, "mount operation failed: tmpfs on %s: option %s", dst, tok);
                }
        }
        if (syscall(SYS_fsconfig, fs, GS_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return gs_error_sys(err, "mount operation failed: tmpfs on %s", dst);
        int m = (int)syscall(SYS_fsmount, fs, GS_FSMOUNT_CLOEXEC, (unsigned)ms_to_attr(flags));
        if (m < 0)
                return gs_error_sys(err, "mount operation failed: tmpfs on %s: fsmount", dst);
        return m;
}

/* Mount a tmpfs onto `*dfd`; same contract as attach_bind. */
static int attach_tmpfs(int *dfd, uint64_t pre_id, int pfd, const char *name, const char *options,
                        unsigned long flags, const char *dst, uint64_t *new_id, struct gs_error *err)
{
        if (!force_legacy) {
                bool unsupported = false;
                gs_autoclose int m = tmpfs_fsmount(options, flags, dst, &unsupported, err);
                if (m < 0 && !unsupported)
                        return -1;
                if (m >= 0) {
                        if (syscall(SYS_move_mount, m, "", *dfd, "",
                                    GS_MOVE_MOUNT_F_EMPTY_PATH | GS_MOVE_MOUNT_T_EMPTY_PATH) < 0)
                                return gs_error_sys(err, "mount operation failed: tmpfs on %s", dst);
                        if (mnt_id_of(m, new_id) < 0) {
                                gs_error_sys(err, "mount operation failed: %s: mount id", dst);
                                umount_fd(m);
                                return -1;
                        }
                        return gs_steal_fd(&m);
                }
        }
        char dp[64];
        snprintf(dp, sizeof(dp), "/proc/self/fd/%d", *dfd);
        if (mount("tmpfs", dp, "tmpfs", flags, options) < 0)
                return gs_error_sys(err, "mount operation failed: tmpfs on %s", dst);
        gs_autoclose int mfd = legacy_find_mount(*dfd, pfd, name, NULL, pre_id, dst, err);
        if (mfd < 0)
                return -1;
        if (mnt_id_of(mfd, new_id) < 0) {
                gs_error_sys(err, "mount operation failed: %s: mount id", dst);
                umount_fd(*dfd);
                return -1;
        }
        return gs_steal_fd(dfd);
}

/* A fresh lookup of the destination must show `sst` (if given; else a tmpfs directory) on the mount
 * `new_id`, which is not the one the node was on before (`pre_id`), with at least `flags`. */
static int verify_mount(int pfd, const char *name, const struct stat *sst, uint64_t pre_id, uint64_t new_id,
                        unsigned long flags, const char *dst, struct gs_error *err)
{
        gs_autoclose int fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        struct statvfs sv;
        struct statfs sfs;
        uint64_t id = 0;
        if (fd < 0 || fstat(fd, &st) < 0 || fstatvfs(fd, &sv) < 0 || fstatfs(fd, &sfs) < 0 || mnt_id_of(fd, &id) < 0)
                return gs_error_sys(err, "mount verification failed: %s", dst);
        if (sst != NULL && (st.st_dev != sst->st_dev || st.st_ino != sst->st_ino))
                return gs_error_set(err, GS_ESYS, "mount verification failed: %s: the source is not mounted there", dst);
        if (sst == NULL && (!S_ISDIR(st.st_mode) || sfs.f_type != TMPFS_MAGIC))
                return gs_error_set(err, GS_ESYS, "mount verification failed: %s: not a tmpfs", dst);
        if (id != new_id || id == pre_id)
                return gs_error_set(err, GS_ESYS, "mount verification failed: %s: not the new mount", dst);
        unsigned long want = flags & GS_MNT_ALLOWED;
        if ((sv.f_flag & want) != want)
                return gs_error_set(err, GS_ESYS, "mount verification failed: %s: flags %#lx not applied (have %#lx)",
                                    dst, want, (unsigned long)sv.f_flag);
        return 0;
}

static int check_flags(unsigned long *flags, const char *dst, struct gs_error *err)
{
        *flags &= ~(unsigned long)(MS_BIND | MS_REMOUNT);
        if ((*flags & ~(unsigned long)GS_MNT_ALLOWED) != 0)
                return gs_error_set(err, GS_EINVAL, "unsupported mount flags %#lx for %s",
                                    *flags & ~(unsigned long)GS_MNT_ALLOWED, dst);
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Public operations */

/* The shared body of gs_mount_bind and gs_mount_tmpfs: src == NULL means a tmpfs. */
static int do_mount(struct gs_rootfs *r, const char *src, const char *dst, enum gs_node_kind kind,
                    const char *options, unsigned long flags, struct gs_error *err)
{
        struct stat sst = {0};
        gs_autoclose int sfd = -1;
        if (src != NULL && (sfd = open_source(r, src, kind, &sst, err)) < 0)
                return -1;

        size_t mark = journal_len(r);
        char name[NAME_MAX + 1], jpath[PATH_MAX];
        int pfd = -1, dfd = -1, mfd = -1;
        uint64_t pre_id = 0, new_id = 0;
        pfd = prepare_dst(r, dst, name, sizeof(name), jpath, sizeof(jpath), err);
        if (pfd < 0)
                goto fail;
        dfd = make_node(r, pfd, name, jpath, dst, kind, src != NULL ? sst.st_mode & 0777 : 0755, err);
        if (dfd < 0)
                goto fail;
        if (mnt_id_of(dfd, &pre_id) < 0) {
                gs_error_sys(err, "mount operation failed: %s: mount id", dst);
                goto fail;
        }
        if (journal_reserve(r, 1, err) < 0)
                goto fail;
        if (src != NULL)
                mfd = attach_bind(sfd, &sst, &dfd, pre_id, pfd, name, flags, src, dst, &new_id, err);
        else
                mfd = attach_tmpfs(&dfd, pre_id, pfd, name, options, flags, dst, &new_id, err);
        if (mfd < 0)
                goto fail;
        journal_push(r, J_MOUNT, mfd, NULL, strdup(dst)); /* the path is only for messages */
        if (verify_mount(pfd, name, src != NULL ? &sst : NULL, pre_id, new_id, flags, dst, err) < 0)
                goto fail;
        if (dfd >= 0)
                close(dfd);
        close(pfd);
        return 0;
fail:
        if (dfd >= 0)
                close(dfd);
        if (pfd >= 0)
                close(pfd);
        rollback_to(r, mark);
        return -1;
}

int gs_mount_bind(struct gs_rootfs *r, const char *src, const char *dst, enum gs_node_kind kind,
                  unsigned long flags, struct gs_error *err)
{
        if (!rootfs_ok(r) || src == NULL || dst == NULL)
                return gs_error_set(err, GS_EINVAL, "invalid argument: bind mount without rootfs, source or destination");
        if (!kind_valid((int)kind))
                return gs_error_set(err, GS_EINVAL, "invalid node kind %d for %s", (int)kind, dst);
        if (check_flags(&flags, dst, err) < 0)
                return -1;
        return do_mount(r, src, dst, kind, NULL, flags, err);
}

int gs_mount_tmpfs(struct gs_rootfs *r, const char *dst, const char *options, unsigned long flags,
                   struct gs_error *err)
{
        if (!rootfs_ok(r) || dst == NULL)
                return gs_error_set(err, GS_EINVAL, "invalid argument: tmpfs without rootfs or destination");
        if (check_flags(&flags, dst, err) < 0)
                return -1;
        return do_mount(r, NULL, dst, GS_NODE_DIR, options, flags, err);
}

/* Shared start of creating one node at dst: resolve and prepare its parent, room in the journal,
 * the journal's copy of the path, then act as the owner (the caller calls owner_leave). Returns
 * the parent fd, or -1 with nothing to undo but what the caller's fail path frees. */
static int begin_create(struct gs_rootfs *r, const char *dst, char *name, size_t namelen, char **jp,
                        struct fscreds *c, struct gs_error *err)
{
        char jpath[PATH_MAX];
        int pfd = prepare_dst(r, dst, name, namelen, jpath, sizeof(jpath), err);
        if (pfd < 0)
                return -1;
        if (journal_enter(r, jpath, jp, c, err) < 0) {
                close(pfd);
                return -1;
        }
        return pfd;
}

int gs_rootfs_write_file(struct gs_rootfs *r, const char *dst, const void *data, size_t len, mode_t mode,
                         struct gs_error *err)
{
        if (!rootfs_ok(r) || dst == NULL || (data == NULL && len > 0))
                return gs_error_set(err, GS_EINVAL, "invalid argument: file without rootfs, path or data");

        size_t mark = journal_len(r);
        char name[NAME_MAX + 1];
        int pfd = -1, fd = -1;
        char *jp = NULL;
        struct stat st;
        struct fscreds c;
        pfd = begin_create(r, dst, name, sizeof(name), &jp, &c, err);
        if (pfd < 0)
                goto fail;
        fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
        owner_leave(&c);
        if (fd < 0) {
                int e = errno;
                if (e == EEXIST && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
                        exists_error(err, dst, st.st_mode, GS_NODE_FILE);
                } else if (e == EEXIST) {
                        gs_error_set(err, GS_ESYS, "file creation failed: %s: file exists", dst);
                        if (err != NULL)
                                err->sys_errno = EEXIST;
                } else {
                        errno = e;
                        gs_error_sys(err, "file creation failed: %s", dst);
                }
                goto fail;
        }
        struct node_id id;
        if (node_id_get(fd, "", &id) < 0) {
                gs_error_sys(err, "file creation failed: %s", dst);
                goto fail; /* not journalled: cannot identify it later */
        }
        journal_push(r, J_FILE, -1, &id, gs_steal_ptr(&jp));
        if (fchmod(fd, mode & 0777) < 0) {
                gs_error_sys(err, "file creation failed: %s: chmod", dst);
                goto fail;
        }
        for (const char *p = data; len > 0;) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n == 0)
                                errno = EIO;
                        gs_error_sys(err, "write %s", dst);
                        goto fail;
                }
                p += n;
                len -= (size_t)n;
        }
        int rc = close(fd);
        fd = -1;
        if (rc < 0) {
                gs_error_sys(err, "write %s", dst);
                goto fail;
        }
        close(pfd);
        return 0;
fail:
        free(jp);
        if (fd >= 0)
                close(fd);
        if (pfd >= 0)
                close(pfd);
        rollback_to(r, mark);
        return -1;
}

int gs_rootfs_symlink(struct gs_rootfs *r, const char *target, const char *dst, struct gs_error *err)
{
        if (!rootfs_ok(r) || target == NULL || dst == NULL || target[0] == '\0' || strlen(target) >= PATH_MAX)
                return gs_error_set(err, GS_EINVAL, "invalid argument: symlink without rootfs, target or path");

        size_t mark = journal_len(r);
        char name[NAME_MAX + 1];
        int pfd = -1;
        char *jp = NULL;
        struct stat st;
        struct fscreds c;
        pfd = begin_create(r, dst, name, sizeof(name), &jp, &c, err);
        if (pfd < 0)
                goto fail;
        int rc = symlinkat(target, pfd, name);
        owner_leave(&c);
        if (rc < 0) {
                if (errno != EEXIST) {
                        gs_error_sys(err, "file creation failed: %s", dst);
                        goto fail;
                }
                char buf[PATH_MAX];
                ssize_t n = readlinkat(pfd, name, buf, sizeof(buf) - 1);
                if (n >= 0)
                        buf[n] = '\0';
                if (n < 0 || strcmp(buf, target) != 0)
                        gs_log_info("%s already exists (not a link to %s); left alone", dst, target);
                free(jp);
                close(pfd);
                return 0;
        }
        struct node_id id;
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode) || node_id_get(pfd, name, &id) < 0) {
                gs_error_sys(err, "file creation failed: %s: stat", dst);
                goto fail;
        }
        journal_push(r, J_SYMLINK, -1, &id, gs_steal_ptr(&jp));
        close(pfd);
        return 0;
fail:
        free(jp);
        if (pfd >= 0)
                close(pfd);
        rollback_to(r, mark);
        return -1;
}

bool gs_rootfs_exists(struct gs_rootfs *r, const char *rel)
{
        if (!rootfs_ok(r) || rel == NULL)
                return false;
        struct gs_error e = {0};
        int fd = open_in_root_retry(r->fd, rel, O_PATH, &e);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}
