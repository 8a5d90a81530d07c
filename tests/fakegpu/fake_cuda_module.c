/* SPDX-License-Identifier: Apache-2.0 */
/* Fake libcuda.so.1 (fake_cuda.h): modules (cubin, fatbin or PTX images) and their functions,
 * each with the duration its name gives (fake_cuda_time.c). Launches: fake_cuda_launch.c. */
#include "fake_cuda.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CUmod_st g_mods[MAX_MODULES];
struct CUfunc_st g_funcs[MAX_FUNCS];

/* A loadable image: a cubin (ELF), a fatbin (magic 0xBA55ED50) or PTX text. Returns its
 * size (0: not an image) and whether it is PTX. */
static size_t image_size(const void *image, int *ptx)
{
    const unsigned char *b = image;
    uint32_t magic;

    *ptx = 0;
    if (memcmp(b, "\177ELF", 4) == 0 && b[4] == 2 /* ELFCLASS64 */) {
        uint64_t shoff, phoff;
        uint16_t shentsize, shnum, phentsize, phnum;
        size_t end, e2;

        memcpy(&phoff, b + 0x20, 8);
        memcpy(&shoff, b + 0x28, 8);
        memcpy(&phentsize, b + 0x36, 2);
        memcpy(&phnum, b + 0x38, 2);
        memcpy(&shentsize, b + 0x3a, 2);
        memcpy(&shnum, b + 0x3c, 2);
        end = (size_t)shoff + (size_t)shentsize * shnum;
        e2 = (size_t)phoff + (size_t)phentsize * phnum;
        if (shoff > (1ULL << 32) || phoff > (1ULL << 32))
            return 0;
        return end > e2 ? end : e2;
    }
    memcpy(&magic, b, sizeof(magic));
    if (magic == 0xBA55ED50u) {
        uint16_t hsize;
        uint64_t fsize;

        memcpy(&hsize, b + 6, 2);
        memcpy(&fsize, b + 8, 8);
        return fsize > (1ULL << 32) ? 0 : (size_t)hsize + (size_t)fsize;
    }
    if (strstr((const char *)b, ".version") != NULL && strstr((const char *)b, ".target") != NULL) {
        *ptx = 1;
        return strlen((const char *)b) + 1;
    }
    return 0;
}

/* Does the module define a kernel `name`? PTX: a ".entry name"; cubin: the name in a string
 * table; fatbin (compressed): any name. */
static int module_has(const struct CUmod_st *m, const char *name)
{
    size_t n = strlen(name);

    if (m->image == NULL)
        return 1;
    if (m->ptx) {
        for (const char *e = m->image; (e = strstr(e, ".entry")) != NULL; e += 6) {
            const char *q = e + 6;

            while (*q == ' ' || *q == '\t')
                q++;
            if (strncmp(q, name, n) == 0 && (q[n] == '(' || isspace((unsigned char)q[n])))
                return 1;
        }
        return 0;
    }
    for (size_t i = 0; i + n + 1 < m->image_size; i++)
        if (m->image[i] == '\0' && memcmp(m->image + i + 1, name, n) == 0 && m->image[i + 1 + n] == '\0')
            return 1;
    return 0;
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    struct CUctx_st *c;
    CUresult rc;
    unsigned long long ch;
    size_t size;
    int ptx;
    char *copy;

    ENTER();
    if (module == NULL || image == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    size = image_size(image, &ptx);
    if (size == 0)
        return CUDA_ERROR_INVALID_IMAGE;   /* seen for junk */
    /* module_memory (config) per module: a small PTX module costs nothing visible (seen). */
    ch = round_up(g_cfg.module_memory, GRAN);
    copy = ptx || memcmp(image, "\177ELF", 4) == 0 ? malloc(size) : NULL;
    if (copy != NULL)
        memcpy(copy, image, size);
    LOCK();
    for (unsigned i = 0; i < MAX_MODULES; i++) {
        if (!g_mods[i].live) {
            rc = ch > 0 ? charge(c->dev, ch) : CUDA_SUCCESS;
            if (rc == CUDA_SUCCESS) {
                free(g_mods[i].image);
                g_mods[i].ctx = c;
                g_mods[i].charge = ch;
                g_mods[i].image = copy;
                g_mods[i].image_size = size;
                g_mods[i].ptx = ptx;
                copy = NULL;
                __atomic_store_n(&g_mods[i].live, 1, __ATOMIC_RELEASE);
                *module = &g_mods[i];
            }
            UNLOCK();
            free(copy);
            return rc;
        }
    }
    UNLOCK();
    free(copy);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static int module_ok(const struct CUmod_st *m)
{
    uintptr_t p = (uintptr_t)m;

    return p >= (uintptr_t)&g_mods[0] && p < (uintptr_t)&g_mods[MAX_MODULES] &&
           (p - (uintptr_t)&g_mods[0]) % sizeof(*m) == 0 && m->live;
}

EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
    ENTER();
    LOCK();
    if (hmod == NULL || !module_ok(hmod)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    for (unsigned j = 0; j < MAX_FUNCS; j++)
        if (g_funcs[j].live && g_funcs[j].mod == hmod)
            __atomic_store_n(&g_funcs[j].live, 0, __ATOMIC_RELEASE);
    uncharge(hmod->ctx->dev, hmod->charge);
    __atomic_store_n(&hmod->live, 0, __ATOMIC_RELEASE);
    UNLOCK();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    struct CUfunc_st *freeslot = NULL;

    ENTER();
    if (hfunc == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;   /* seen for a NULL name */
    if (name[0] == '\0' || strlen(name) >= sizeof(g_funcs[0].name))
        return CUDA_ERROR_NOT_FOUND;
    LOCK();
    if (hmod == NULL || !module_ok(hmod)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (!module_has(hmod, name)) {
        UNLOCK();
        return CUDA_ERROR_NOT_FOUND;   /* seen */
    }
    /* The same name gives the same handle. */
    for (unsigned j = 0; j < MAX_FUNCS; j++) {
        if (g_funcs[j].live && g_funcs[j].mod == hmod && strcmp(g_funcs[j].name, name) == 0) {
            *hfunc = &g_funcs[j];
            UNLOCK();
            return CUDA_SUCCESS;
        }
        if (!g_funcs[j].live && freeslot == NULL)
            freeslot = &g_funcs[j];
    }
    if (freeslot == NULL) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    freeslot->mod = hmod;
    snprintf(freeslot->name, sizeof(freeslot->name), "%s", name);
    freeslot->base_ns = kernel_base_ns(name);
    freeslot->fault = strstr(name, "illegal_address") != NULL;
    __atomic_store_n(&freeslot->live, 1, __ATOMIC_RELEASE);
    *hfunc = freeslot;
    UNLOCK();
    return CUDA_SUCCESS;
}
