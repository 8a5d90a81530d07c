/*
 * Which executable runs gpuslice's hooks, and the words its arguments start with (hook_exe.c).
 * The hook definitions gpuslice writes (CDI specs, the runtime shim's legacy hook) name the lean
 * hook, gpuslice-hook (src/cli/hook_main.c: the hook verbs alone, linked against what they use),
 * where it is installed; `gpuslice hook` and `gpuslice cdi-hook` run the same code, so specs and
 * configs that name gpuslice keep working.
 */
#ifndef GS_RUNTIME_HOOK_EXE_H
#define GS_RUNTIME_HOOK_EXE_H

#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

#define GS_HOOK_EXE "gpuslice-hook"

/* `path` names the lean hook: its file name is gpuslice-hook. */
bool gs_hook_exe_is_lean(const char *path);

/* The words a hook's args start with for the executable `path`: for a stage (`cdi` false) or a
 * CDI createContainer hook (`cdi` true). The lean hook takes both directly ("gpuslice-hook
 * createRuntime", "gpuslice-hook create-symlinks ..."); any other path is gpuslice ("gpuslice hook
 * createRuntime", "gpuslice cdi-hook create-symlinks ..."). Returns how many words (1 or 2). */
size_t gs_hook_exe_words(const char *path, bool cdi, const char *words[2]);

/* The hooks' executable when none is configured: gpuslice-hook in the directory of this process's
 * executable (/proc/self/exe) when it is there and executable, else gpuslice there, else this
 * executable itself. Resolved in this process's filesystem: a plugin in a container that writes
 * specs for its host names the host's path in its config instead. */
int gs_hook_exe_default(char *out, size_t len, struct gs_error *err);

#endif
