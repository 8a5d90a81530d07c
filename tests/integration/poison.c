/*
 * poc.so: the payload of the CVE-2025-23266 ("NVIDIAScape") regression test (test_hook.sh).
 *
 * A hostile image sets LD_PRELOAD=/proc/self/cwd/poc.so (and LD_LIBRARY_PATH pointing at copies
 * of this library named like the libraries a hook links). A hook process that inherits the
 * image's environment loads it; its constructor then records the fact:
 *   - appends "preload <pid> <exe> <own path>" to $GS_POISON_MARKER (the test sets it in the
 *     image's environment; a hook that inherits the environment inherits it too), and
 *   - appends the same line to POISONED in the directory this library was loaded from (found
 *     with dladdr), so a load is recorded even where the variable is gone,
 *   - and says so on stderr (runc quotes a hook's stderr in its errors).
 * Nothing else: the process goes on normally. Built without sanitizers (it is loaded into
 * arbitrary host programs). Only libc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void append(const char *path, const char *line, size_t len)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
                return;
        if (write(fd, line, len) < 0) {
                /* nothing to do: the marker is best effort */
        }
        close(fd);
}

__attribute__((constructor)) static void poisoned(void)
{
        char exe[PATH_MAX] = "?", self[PATH_MAX] = "?", line[3 * PATH_MAX + 64];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n > 0)
                exe[n] = '\0';
        Dl_info info;
        if (dladdr((void *)poisoned, &info) != 0 && info.dli_fname != NULL)
                snprintf(self, sizeof(self), "%s", info.dli_fname);
        int len = snprintf(line, sizeof(line), "preload %d %s %s\n", (int)getpid(), exe, self);
        if (len <= 0)
                return;
        if ((size_t)len >= sizeof(line))
                len = (int)sizeof(line) - 1;
        const char *marker = getenv("GS_POISON_MARKER");
        if (marker != NULL && *marker == '/')
                append(marker, line, (size_t)len);
        /* next to this library: <dir of dli_fname>/POISONED (resolved, so /proc/self/cwd works) */
        char dir[PATH_MAX];
        if (self[0] != '?' && realpath(self, dir) != NULL) {
                char *slash = strrchr(dir, '/');
                if (slash != NULL) {
                        snprintf(slash, sizeof(dir) - (size_t)(slash - dir), "/POISONED");
                        append(dir, line, (size_t)len);
                }
        }
        fputs("POISONED: ", stderr);
        fputs(line, stderr);
}
