/*
 * CDI (Container Device Interface) specs: generated from the same discovery `configure` uses, read
 * back for `cdi list`.
 *
 *   spec.c   names (strategies, vendor/class/device grammar), slices, the spec tree (json-c),
 *            the minimum cdiVersion, loading a spec file and its qualified device names, output
 *   yaml.c   YAML: a block-style emitter over the json-c tree, and a reader (libyaml) into json-c
 *
 * The createContainer hooks a spec names (`gpuslice-hook create-symlinks / update-ldcache`, or
 * `gpuslice cdi-hook ...`) do container work: they live in runtime/cdi_hook.c (runtime/cdi_hook.h);
 * which executable and words a hook names: runtime/hook_exe.h.
 *
 * Fallible functions return -1 (or NULL) and fill the caller's struct gs_error; err->stage is set
 * where the CLI should print a stage other than "cdi" (initialization, detection).
 */
#ifndef GS_CDI_CDI_H
#define GS_CDI_CDI_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

#define GS_CDI_DEFAULT_VENDOR "nvidia.com"
#define GS_CDI_DEFAULT_CLASS "gpu"
/* The environment of every hook a spec names: explicit, so a runtime never hands the image's
 * environment (LD_PRELOAD, ...) to the privileged hook (CVE-2025-23266). */
#define GS_CDI_HOOK_ENV "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
#define GS_CDI_MAX_SLICES 64
#define GS_CDI_SPEC_MAX (16u << 20) /* spec files larger than this are refused */

enum gs_cdi_strategy {
        GS_CDI_NAME_INDEX,      /* 0, MIG 0:1 */
        GS_CDI_NAME_UUID,       /* GPU-..., MIG-... */
        GS_CDI_NAME_TYPE_INDEX, /* gpu0, MIG mig0:1 */
};

enum gs_cdi_format { GS_CDI_YAML, GS_CDI_JSON };

/* --slice NAME=MEM[,COMPUTE[,PRIORITY]]: a device <gpu-name>-<NAME> per GPU device (and all).
 * Its limits are the allocator's word: the args of its createRuntime hook (`gpuslice hook
 * --memory=MEM [--compute-share=COMPUTE] [--priority=P] [--compute-mode=M] createRuntime`), the
 * ceiling of the container's slice (runtime/slice_rules.h), and, for the container's information
 * only, the same values as env (GPUSLICE_MEMORY_LIMIT, ...), which can only narrow them. */
struct gs_cdi_slice {
        char name[64];    /* [A-Za-z0-9_.-]+, ending in a letter or digit */
        char memory[64];  /* as gs_vgpu_parse_size accepts it, > 0 ("0": no quota, from the plugins) */
        unsigned compute; /* percent 1..100, 0 = not set */
        char priority[8]; /* "high", "normal", "low"; "" = not set (normal; the container may lower it) */
        char compute_mode[8]; /* "cap", "share", "off"; "" = not set (cap; the container may not widen it) */
        bool gpus_only;   /* no "all-<NAME>" device */
        bool per_gpu;     /* its limits are its GPU's alone (runtime/slice_gpus.h: the DRA plugin adds the
                           * hook's --gpu): memory and compute not as env, one name for every GPU of the
                           * container, where two such slices' values would collide; a device
                           * <mig>-<NAME> per MIG device too, its limits the MIG device's) */
};

struct gs_cdi_opts {
        const char *vendor;            /* NULL: GS_CDI_DEFAULT_VENDOR */
        const char *class;             /* NULL: GS_CDI_DEFAULT_CLASS */
        enum gs_cdi_strategy strategy;
        const struct gs_cdi_slice *slices;
        size_t nslices;
        const char *hook_path;         /* absolute path of the executable the hooks run: gpuslice-hook
                                        * (its args "gpuslice-hook STAGE"), else gpuslice's verbs */
};

/* ------------------------------------------------------------------------------------------ */
/* Names (spec.c) */

/* "index" | "uuid" | "type-index". */
int gs_cdi_parse_strategy(const char *s, enum gs_cdi_strategy *out, struct gs_error *err);
/* The device name of GPU `gpu` (mig == NULL) or of its MIG device `mig`. */
void gs_cdi_device_name(enum gs_cdi_strategy s, const struct gs_gpu *gpu, const struct gs_mig_device *mig,
                        char *buf, size_t len);
/* The CDI grammar (tags.cncf.io/container-device-interface, pkg/parser): vendor: a letter first,
 * a letter or digit last, [A-Za-z0-9_.-] between (DNS-ish: no empty label); class: the same with
 * at most 63 characters (a '.' in a class needs cdiVersion 0.6.0); device name: a letter or digit
 * at both ends, [A-Za-z0-9_.:-] between. */
int gs_cdi_validate_vendor(const char *vendor, struct gs_error *err);
int gs_cdi_validate_class(const char *class, struct gs_error *err);
int gs_cdi_validate_device_name(const char *name, struct gs_error *err);
/* Parse "NAME=MEM[,COMPUTE[,PRIORITY]]" (PRIORITY: high, normal or low, any case). */
int gs_cdi_parse_slice(const char *arg, struct gs_cdi_slice *out, struct gs_error *err);

/* ------------------------------------------------------------------------------------------ */
/* Specs (spec.c) */

/* The lowest cdiVersion whose schema covers what `spec` uses (the rules of CDI's
 * specs-go/version.go), never below "0.3.0". A static string. */
const char *gs_cdi_min_version(json_object *spec);

/* Build the spec from devices and driver files already found (exposed for tests). */
json_object *gs_cdi_spec_build(struct gs_context *ctx, const struct gs_device_info *dev,
                               const struct gs_driver_info *drv, const struct gs_cdi_opts *o,
                               struct gs_error *err);
/* Discover (gs_devices, gs_driver_discover with every capability but compat32) and build. */
json_object *gs_cdi_generate(struct gs_context *ctx, const struct gs_cdi_opts *o, struct gs_error *err);

/* The fully qualified device names ("vendor/class=name") a spec offers, after checking what a
 * CDI consumer checks first: cdiVersion, kind, a non-empty devices list of valid, unique names.
 * `*names` is a NULL-terminated malloc'd vector (free with gs_cdi_names_free). */
int gs_cdi_spec_names(json_object *spec, char ***names, size_t *n, struct gs_error *err);
void gs_cdi_names_free(char **names);

/* Parse spec text: JSON (json-c) when `format_hint` says so or the text starts with '{',
 * else YAML (libyaml). */
json_object *gs_cdi_spec_parse(const char *text, size_t len, int format_hint, struct gs_error *err);
/* Read a spec file (.json: JSON; .yaml/.yml: YAML; else by content). */
json_object *gs_cdi_spec_load(const char *path, struct gs_error *err);

/* .json -> JSON, anything else YAML. */
enum gs_cdi_format gs_cdi_format_for_path(const char *path);
/* The spec as text (malloc'd), with a trailing newline. */
char *gs_cdi_spec_format(json_object *spec, enum gs_cdi_format f, struct gs_error *err);
/* Write `text` to `path` atomically: a temporary file in the same directory, mode 0644, fsync,
 * rename. */
int gs_cdi_write_file(const char *path, const char *text, struct gs_error *err);
/* The same with flags: GS_CDI_WRITE_NOSYNC, no fsync (a transient file that a crash of the
 * machine may lose: its reader checks it is there); GS_CDI_WRITE_DURABLE, also fsync the
 * directory after the rename (the new name survives a crash once this returns). */
#define GS_CDI_WRITE_NOSYNC 1u
#define GS_CDI_WRITE_DURABLE 2u
int gs_cdi_write_file_flags(const char *path, const char *text, unsigned flags, struct gs_error *err);

/* ------------------------------------------------------------------------------------------ */
/* YAML (yaml.c) */

/* Block-style YAML for a json-c tree; strings a YAML reader could take for something else are
 * double-quoted and escaped. NULL (GS_EFORMAT) for a string that is not valid UTF-8. */
char *gs_yaml_emit(json_object *obj, struct gs_error *err);
/* The first document of a YAML stream as a json-c tree (plain scalars resolved as YAML's core
 * schema: null, booleans, integers, floats; everything else a string). Aliases are expanded, with
 * a limit on the nodes made. Errors: "invalid YAML: <problem> at line L, column C" (GS_EFORMAT). */
json_object *gs_yaml_parse(const char *text, size_t len, struct gs_error *err);

#endif
