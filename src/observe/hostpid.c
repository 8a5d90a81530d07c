/* Host pids of a slice's processes, through /proc (gs_obs_host_pids in collect.h). */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "observe/collect.h"

/* The innermost pid (the last NSpid field) of host process `pid`, or 0. */
static int innermost_pid(int pid)
{
        char path[64], buf[4096];
        snprintf(path, sizeof(path), "/proc/%d/status", pid);
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        char *line = strstr(buf, "\nNSpid:");
        if (line == NULL)
                return 0;
        line += 7;
        char *eol = strchr(line, '\n');
        if (eol != NULL)
                *eol = '\0';
        int last = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t", &save); tok != NULL; tok = strtok_r(NULL, " \t", &save))
                last = atoi(tok);
        return last;
}

static bool same_ns(int pid, const struct stat *ns)
{
        char path[64];
        struct stat st;
        snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
        return stat(path, &st) == 0 && st.st_dev == ns->st_dev && st.st_ino == ns->st_ino;
}

/* Is slot pr host process p (innermost pid `inner`; its start time asked only when needed)? */
static bool slot_is(const struct gs_obs_proc *pr, int p, int inner)
{
        return pr->pid == inner && (pr->start_time == 0 || gs_region_proc_start_time(p) == pr->start_time);
}

/* Try host process p for every slot not found yet. */
static unsigned match(const struct gs_obs_slice *s, pid_t *out, int p)
{
        int inner = innermost_pid(p);
        if (inner <= 0)
                return 0;
        unsigned found = 0;
        for (unsigned i = 0; i < s->nprocs; i++) {
                if (out[i] != 0 || !slot_is(&s->procs[i], p, inner))
                        continue;
                out[i] = p;
                found++;
        }
        return found;
}

size_t gs_obs_slices_of_host_pid(const struct gs_observation *obs, pid_t p, size_t *out, size_t max)
{
        char path[64];
        struct stat ns;
        int inner = p > 0 ? innermost_pid(p) : 0;
        snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)p);
        if (inner <= 0 || stat(path, &ns) < 0)
                return 0; /* gone, or not ours to see */
        size_t n = 0;
        for (size_t i = 0; i < obs->nslices; i++) {
                const struct gs_obs_slice *s = &obs->slices[i];
                if (!s->in_regions_dir || s->owner_pid <= 0 || !same_ns((int)s->owner_pid, &ns))
                        continue; /* only the owner's pid namespace: a region names its own processes alone */
                for (unsigned k = 0; k < s->nprocs; k++) {
                        if (slot_is(&s->procs[k], (int)p, inner)) {
                                if (n < max)
                                        out[n] = i;
                                n++;
                                break;
                        }
                }
        }
        return n;
}

unsigned gs_obs_host_pids(const struct gs_obs_slice *s, pid_t *out)
{
        unsigned found = 0;
        memset(out, 0, s->nprocs * sizeof(*out));
        struct stat ns;
        char nspath[64];
        snprintf(nspath, sizeof(nspath), "/proc/%d/ns/pid", (int)s->owner_pid);
        bool have_ns = s->owner_pid > 0 && stat(nspath, &ns) == 0;
        for (unsigned i = 0; i < s->nprocs; i++) {
                const struct gs_obs_proc *pr = &s->procs[i];
                /* The region's own record, when a writer filled it: the container writes the
                 * region, so it is only a hint, taken when /proc says that process is this slot's
                 * (the owner's pid namespace, innermost pid and start time). */
                int hp = pr->host_pid;
                if (hp > 0 && pr->start_time != 0 && (!have_ns || same_ns(hp, &ns)) && innermost_pid(hp) == pr->pid &&
                    gs_region_proc_start_time(hp) == pr->start_time)
                        out[i] = hp, found++;
        }
        if (found == s->nprocs)
                return found;
        DIR *d = opendir("/proc");
        if (d == NULL)
                return found;
        struct dirent *e;
        while (found < s->nprocs && (e = readdir(d)) != NULL) {
                if (!isdigit((unsigned char)e->d_name[0]))
                        continue;
                int p = atoi(e->d_name);
                if (p <= 0 || (have_ns && !same_ns(p, &ns)))
                        continue;
                found += match(s, out, p);
        }
        closedir(d);
        return found;
}
