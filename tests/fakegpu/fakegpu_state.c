/* SPDX-License-Identifier: Apache-2.0 */
/* fakegpu shared state (per-process device memory usage). Design: fakegpu_state.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fakegpu_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void fg_state_path(const struct fg_config *cfg, char *buf, size_t len)
{
    const char *env = getenv(FG_STATE_ENV);
    const char *dir = "/dev/shm";
    struct stat sb;

    if (env != NULL && env[0] != '\0') {
        snprintf(buf, len, "%s", env);
        return;
    }
    if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode) || access(dir, W_OK | X_OK) < 0)
        dir = "/tmp";
    snprintf(buf, len, "%s/fakegpu-%016llx.state", dir, cfg->text_hash);
}

static int ofd_lock(int fd, short type, off_t start, int cmd)
{
    struct flock fl;

    memset(&fl, 0, sizeof(fl));
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = 1;
    for (;;) {
        if (fcntl(fd, cmd, &fl) == 0)
            return cmd == F_OFD_GETLK ? fl.l_type != F_UNLCK : 0;
        if (errno != EINTR)
            return -1;
    }
}

static off_t slot_offset(unsigned i)
{
    return (off_t)(offsetof(struct fg_state_file, slots) + (size_t)i * sizeof(struct fg_state_slot));
}

int fg_state_open(struct fg_state *st, const char *path, int writable)
{
    struct stat sb;
    void *map;
    int fd, saved;

    st->fd = -1;
    st->map = NULL;
    st->slot = -1;
    st->writable = writable;
    fd = open(path, writable ? O_RDWR | O_CREAT | O_CLOEXEC : O_RDONLY | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    if (writable) {
        (void)fchmod(fd, 0666);   /* shared by every user of the simulated GPU; umask aside */
        if (ofd_lock(fd, F_WRLCK, 0, F_OFD_SETLKW) < 0)
            goto fail;
    }
    if (fstat(fd, &sb) < 0)
        goto fail_unlock;
    if ((size_t)sb.st_size < sizeof(struct fg_state_file)) {
        if (!writable || ftruncate(fd, (off_t)sizeof(struct fg_state_file)) < 0) {
            errno = writable ? errno : ENODATA;
            goto fail_unlock;
        }
    }
    map = mmap(NULL, sizeof(struct fg_state_file), writable ? PROT_READ | PROT_WRITE : PROT_READ,
               MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        goto fail_unlock;
    st->map = map;
    if (memcmp(st->map->magic, FG_STATE_MAGIC, 8) != 0 || st->map->nslots != FG_STATE_SLOTS ||
        st->map->nunits != FG_STATE_UNITS) {
        if (!writable) {
            munmap(map, sizeof(struct fg_state_file));
            st->map = NULL;
            errno = ENODATA;
            goto fail;
        }
        /* New (zero) file or another layout: start afresh. */
        memset(st->map, 0, sizeof(struct fg_state_file));
        st->map->nslots = FG_STATE_SLOTS;
        st->map->nunits = FG_STATE_UNITS;
        memcpy(st->map->magic, FG_STATE_MAGIC, 8);
    }
    if (writable)
        (void)ofd_lock(fd, F_UNLCK, 0, F_OFD_SETLK);
    st->fd = fd;
    return 0;

fail_unlock:
    if (writable)
        (void)ofd_lock(fd, F_UNLCK, 0, F_OFD_SETLK);
fail:
    saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

void fg_state_close(struct fg_state *st)
{
    if (st->map != NULL)
        munmap(st->map, sizeof(struct fg_state_file));
    if (st->fd >= 0)
        close(st->fd);   /* drops our slot lock: the slot reads as dead from now on */
    st->fd = -1;
    st->map = NULL;
    st->slot = -1;
}

int fg_state_lock(struct fg_state *st)
{
    if (st->fd < 0 || !st->writable)
        return -1;
    return ofd_lock(st->fd, F_WRLCK, 0, F_OFD_SETLKW);
}

void fg_state_unlock(struct fg_state *st)
{
    if (st->fd >= 0 && st->writable)
        (void)ofd_lock(st->fd, F_UNLCK, 0, F_OFD_SETLK);
}

int fg_state_alive(struct fg_state *st, unsigned i)
{
    if (st->map == NULL || i >= FG_STATE_SLOTS)
        return 0;
    if ((int)i == st->slot)
        return 1;
    if (__atomic_load_n(&st->map->slots[i].pid, __ATOMIC_ACQUIRE) == 0)
        return 0;
    /* Someone else holds the slot lock: alive. An error reads as alive (never reap wrongly). */
    return ofd_lock(st->fd, F_WRLCK, slot_offset(i), F_OFD_GETLK) != 0;
}

void fg_state_reap(struct fg_state *st)
{
    if (st->map == NULL || !st->writable)
        return;
    for (unsigned i = 0; i < FG_STATE_SLOTS; i++) {
        struct fg_state_slot *s = &st->map->slots[i];

        if (s->pid != 0 && !fg_state_alive(st, i)) {
            memset(s->used, 0, sizeof(s->used));
            __atomic_store_n(&s->pid, 0, __ATOMIC_RELEASE);
        }
    }
}

/* The caller's pid namespace, as an inode number (0 when /proc cannot say). */
static uint32_t own_pidns(void)
{
    struct stat sb;

    return stat("/proc/self/ns/pid", &sb) == 0 ? (uint32_t)sb.st_ino : 0;
}

/* The pid, in the caller's namespace, of the process that is `pid` in namespace `ns`; 0 when the
 * caller cannot see it (the real driver translates with pid_vnr() and hides those). */
static unsigned pid_seen_from_here(uint32_t ns, unsigned pid)
{
    uint32_t here = own_pidns();
    DIR *d;
    struct dirent *e;
    unsigned found = 0;

    if (ns == 0 || here == 0 || ns == here)
        return pid;
    d = opendir("/proc");
    if (d == NULL)
        return 0;
    while (found == 0 && (e = readdir(d)) != NULL) {
        char path[300], line[256];
        struct stat sb;
        FILE *f;

        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/ns/pid", e->d_name);
        if (stat(path, &sb) < 0 || (uint32_t)sb.st_ino != ns)
            continue;
        snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
        f = fopen(path, "re");
        if (f == NULL)
            continue;
        while (fgets(line, sizeof(line), f) != NULL) {
            char *last;

            if (strncmp(line, "NSpid:", 6) != 0)
                continue;
            last = strrchr(line, '\t');
            if (last != NULL && (unsigned)strtoul(last + 1, NULL, 10) == pid)
                found = (unsigned)strtoul(e->d_name, NULL, 10);
            break;
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

int fg_state_claim(struct fg_state *st, unsigned pid)
{
    if (st->map == NULL || !st->writable)
        return -1;
    fg_state_reap(st);
    for (unsigned i = 0; i < FG_STATE_SLOTS; i++) {
        struct fg_state_slot *s = &st->map->slots[i];

        if (s->pid != 0)
            continue;
        if (ofd_lock(st->fd, F_WRLCK, slot_offset(i), F_OFD_SETLK) < 0)
            continue;   /* a dying owner still holds it: try the next one */
        memset(s->used, 0, sizeof(s->used));
        s->pidns = own_pidns();
        __atomic_store_n(&s->pid, pid, __ATOMIC_RELEASE);
        st->slot = (int)i;
        return (int)i;
    }
    return -1;
}

unsigned long long fg_state_unit_used(struct fg_state *st, unsigned unit, int skip_self)
{
    unsigned long long sum = 0;

    if (st->map == NULL || unit >= FG_STATE_UNITS)
        return 0;
    for (unsigned i = 0; i < FG_STATE_SLOTS; i++) {
        if (skip_self && (int)i == st->slot)
            continue;
        if (!fg_state_alive(st, i))
            continue;
        sum += __atomic_load_n(&st->map->slots[i].used[unit], __ATOMIC_RELAXED);
    }
    return sum;
}

void fg_state_set_own(struct fg_state *st, unsigned unit, unsigned long long bytes)
{
    if (st->map == NULL || st->slot < 0 || unit >= FG_STATE_UNITS)
        return;
    __atomic_store_n(&st->map->slots[st->slot].used[unit], bytes, __ATOMIC_RELEASE);
}

unsigned fg_state_procs(struct fg_state *st, unsigned unit, int all_migs, unsigned *pids,
                        unsigned long long *bytes, unsigned max)
{
    unsigned n = 0;
    unsigned first = unit, last = unit;

    if (st->map == NULL || unit >= FG_STATE_UNITS)
        return 0;
    if (all_migs)
        last = unit + FG_STATE_UNITS_PER_GPU - 1;
    for (unsigned i = 0; i < FG_STATE_SLOTS; i++) {
        unsigned long long b = 0;
        unsigned pid;

        if (!fg_state_alive(st, i))
            continue;
        pid = __atomic_load_n(&st->map->slots[i].pid, __ATOMIC_ACQUIRE);
        for (unsigned u = first; u <= last; u++)
            b += __atomic_load_n(&st->map->slots[i].used[u], __ATOMIC_RELAXED);
        if (b == 0 || pid == 0)
            continue;
        pid = pid_seen_from_here(st->map->slots[i].pidns, pid);
        if (pid == 0)
            continue;
        if (n < max) {
            pids[n] = pid;
            bytes[n] = b;
        }
        n++;
    }
    return n;
}
