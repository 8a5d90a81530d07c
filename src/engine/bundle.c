/* A bundle's config.json by fd: read once, written back atomically in the same directory. */
#include "engine/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "runtime/oci.h"

int gs_bundle_open(const char *bundle, struct gs_bundle *b, struct gs_error *err)
{
        memset(b, 0, sizeof(*b));
        b->dirfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (b->dirfd < 0)
                return gs_error_sys(err, "cannot open the bundle %s", bundle);
        gs_autoclose int fd = openat(b->dirfd, "config.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                gs_error_sys(err, "cannot open %s/config.json", bundle);
                goto fail;
        }
        if (!S_ISREG(st.st_mode) || st.st_size > (off_t)GS_OCI_CONFIG_MAX) {
                gs_error_set(err, GS_EFORMAT, "%s/config.json: %s", bundle,
                             S_ISREG(st.st_mode) ? "larger than 16 MiB" : "not a regular file");
                goto fail;
        }
        b->mode = st.st_mode & 07777;
        b->uid = st.st_uid;
        b->gid = st.st_gid;
        b->text = malloc((size_t)st.st_size + 1);
        if (b->text == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                goto fail;
        }
        while (b->len < (size_t)st.st_size) {
                ssize_t r = read(fd, b->text + b->len, (size_t)st.st_size - b->len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        gs_error_sys(err, "cannot read %s/config.json", bundle);
                        goto fail;
                }
                if (r == 0)
                        break;
                b->len += (size_t)r;
        }
        b->text[b->len] = '\0';
        return 0;
fail:
        gs_bundle_close(b);
        return -1;
}

static int write_all(int fd, const char *p, size_t len)
{
        while (len > 0) {
                ssize_t w = write(fd, p, len);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                p += w;
                len -= (size_t)w;
        }
        return 0;
}

int gs_bundle_write(struct gs_bundle *b, const char *text, size_t len, struct gs_error *err)
{
        char tmp[64];
        int fd = -1;
        for (int tries = 0; tries < 16 && fd < 0; tries++) {
                snprintf(tmp, sizeof(tmp), ".config.json.gpuslice-%ld-%d", (long)getpid(), tries);
                fd = openat(b->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0 && errno != EEXIST)
                        break;
        }
        if (fd < 0)
                return gs_error_sys(err, "cannot create a temporary file in the bundle");
        /* No fsync: the rename alone keeps a reader from ever seeing half a file, and the runtime
         * reads it at once; a bundle does not outlive a crash of the machine in any use (engines
         * keep bundles under /run and make them again), and an fsync cost the shim milliseconds
         * per container on a disk-backed bundle directory. */
        if (write_all(fd, text, len) < 0 || fchmod(fd, b->mode) < 0 ||
            (geteuid() == 0 && fchown(fd, b->uid, b->gid) < 0)) {
                gs_error_sys(err, "cannot write the new config.json");
                goto fail;
        }
        if (close(fd) < 0) {
                fd = -1;
                gs_error_sys(err, "cannot write the new config.json");
                goto fail;
        }
        fd = -1;
        if (renameat(b->dirfd, tmp, b->dirfd, "config.json") < 0) {
                gs_error_sys(err, "cannot replace config.json");
                goto fail;
        }
        return 0;
fail:
        if (fd >= 0)
                close(fd);
        unlinkat(b->dirfd, tmp, 0);
        return -1;
}

void gs_bundle_close(struct gs_bundle *b)
{
        if (b->dirfd >= 0)
                close(b->dirfd);
        b->dirfd = -1;
        free(b->text);
        b->text = NULL;
}
