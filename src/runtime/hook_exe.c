/* The executable gpuslice's hook definitions name, and their first words (see hook_exe.h). */
#include "runtime/hook_exe.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"

bool gs_hook_exe_is_lean(const char *path)
{
        const char *base = strrchr(path, '/');
        return strcmp(base != NULL ? base + 1 : path, GS_HOOK_EXE) == 0;
}

size_t gs_hook_exe_words(const char *path, bool cdi, const char *words[2])
{
        if (gs_hook_exe_is_lean(path)) {
                words[0] = GS_HOOK_EXE;
                return 1;
        }
        words[0] = "gpuslice";
        words[1] = cdi ? "cdi-hook" : "hook";
        return 2;
}

/* `name` in the directory of `self` into out, when it is there and executable. */
static bool beside(const char *self, const char *name, char *out, size_t len)
{
        const char *slash = strrchr(self, '/');
        if (slash == NULL)
                return false;
        int n = snprintf(out, len, "%.*s/%s", (int)(slash - self), self, name);
        return n > 0 && (size_t)n < len && access(out, X_OK) == 0;
}

int gs_hook_exe_default(char *out, size_t len, struct gs_error *err)
{
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
                return gs_error_sys(err, "cannot find the gpuslice executable (/proc/self/exe)");
        self[n] = '\0';
        if (beside(self, GS_HOOK_EXE, out, len) || beside(self, "gpuslice", out, len))
                return 0;
        if ((size_t)n >= len)
                return gs_error_set(err, GS_EINVAL, "the executable's path is too long: %s", self);
        memcpy(out, self, (size_t)n + 1);
        return 0;
}
