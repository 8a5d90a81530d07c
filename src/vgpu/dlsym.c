/*
 * Entry-point redirection.
 *
 * dlsym: the CUDA runtime and frameworks dlopen libcuda.so.1 / libnvidia-ml.so.1 and dlsym their
 * entry points by handle, which ELF interposition does not catch. Our dlsym returns our wrapper
 * for a hooked name whenever the real lookup finds the symbol. RTLD_NEXT must stay relative to the
 * *caller*, which glibc derives from the return address: so dlsym is a tiny assembly stub that
 * tail-jumps to the real dlsym for RTLD_NEXT (the caller's return address is untouched) and calls
 * our C code otherwise. dlvsym gets the same treatment. The real dlsym and dlvsym are found in
 * libc's (or, before glibc 2.34, libdl's) own symbol table through its GNU hash, so no lookup of
 * ours ever goes through the overridden functions.
 *
 * cuGetProcAddress(_v2): the driver picks the ABI variant for the caller's cudaVersion and flags
 * (per-thread default stream included); we ask it, then swap its answer for our wrapper of exactly
 * that variant (matched by address, or by the exported name dladdr gives for that address). A
 * variant we do not wrap is returned as the driver gave it.
 */

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "vgpu/hooks.h"
#include "vgpu/vgpu.h"
#include "vgpu/limiter.h"

void *(*gs_real_dlsym)(void *, const char *) = NULL;
__attribute__((visibility("hidden"))) void *(*gs_real_dlvsym)(void *, const char *, const char *) = NULL;

/* This runs before anything else of ours, possibly inside a sanitizer runtime's own start-up
 * (which calls dlsym while its interceptors of strcmp, dl_iterate_phdr, ... are not set up yet):
 * so no libc call at all, only the loader's link map (_r_debug, a data symbol) and plain loops. */

/* A dynamic-section address: glibc relocates these entries in place; other loaders may not. */
static uintptr_t dyn_addr(ElfW(Addr) base, ElfW(Addr) v) { return v < base ? base + v : v; }

static bool same_str(const char *a, const char *b)
{
        while (*a != '\0' && *a == *b)
                a++, b++;
        return *a == *b;
}

/* Is the file name of path (after the last '/') prefix...? */
static bool basename_starts(const char *path, const char *prefix)
{
        const char *base = path;
        for (const char *c = path; *c != '\0'; c++)
                if (*c == '/')
                        base = c + 1;
        while (*prefix != '\0' && *base == *prefix)
                base++, prefix++;
        return *prefix == '\0';
}

/* The defined function `name` in one object, by its GNU hash table. */
static void *gnu_hash_find(ElfW(Addr) base, const uint32_t *gh, const ElfW(Sym) *symtab, const char *strtab,
                           const char *name)
{
        uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_words = gh[2];
        if (nbuckets == 0)
                return NULL;
        const ElfW(Addr) *bloom = (const ElfW(Addr) *)(const void *)&gh[4];
        const uint32_t *buckets = (const uint32_t *)(const void *)&bloom[bloom_words];
        const uint32_t *chain = &buckets[nbuckets];
        uint32_t h = 5381;
        for (const unsigned char *c = (const unsigned char *)name; *c != '\0'; c++)
                h = h * 33 + *c;
        uint32_t i = buckets[h % nbuckets];
        if (i < symoffset)
                return NULL;
        for (;; i++) {
                uint32_t h2 = chain[i - symoffset];
                const ElfW(Sym) *sym = &symtab[i];
                if ((h | 1) == (h2 | 1) && sym->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym->st_info) == STT_FUNC &&
                    same_str(strtab + sym->st_name, name))
                        return (void *)(base + sym->st_value);
                if (h2 & 1)
                        return NULL;
        }
}

/* `name` defined in the first loaded object whose file name starts with lib, or NULL. */
static void *find_in_lib(const char *lib, const char *name)
{
        for (const struct link_map *m = _r_debug.r_map; m != NULL; m = m->l_next) {
                if (m->l_name == NULL || m->l_ld == NULL || !basename_starts(m->l_name, lib))
                        continue;
                const uint32_t *gh = NULL;
                const ElfW(Sym) *symtab = NULL;
                const char *strtab = NULL;
                for (const ElfW(Dyn) *dyn = m->l_ld; dyn->d_tag != DT_NULL; dyn++) {
                        if (dyn->d_tag == DT_GNU_HASH)
                                gh = (const uint32_t *)dyn_addr(m->l_addr, dyn->d_un.d_ptr);
                        else if (dyn->d_tag == DT_SYMTAB)
                                symtab = (const ElfW(Sym) *)dyn_addr(m->l_addr, dyn->d_un.d_ptr);
                        else if (dyn->d_tag == DT_STRTAB)
                                strtab = (const char *)dyn_addr(m->l_addr, dyn->d_un.d_ptr);
                }
                if (gh != NULL && symtab != NULL && strtab != NULL)
                        return gnu_hash_find(m->l_addr, gh, symtab, strtab, name);
        }
        return NULL;
}

__attribute__((constructor(101))) static void resolve_dlsym(void)
{
        static const char *const libs[] = {"libc.so.", "libdl.so."}; /* dlsym moved to libc in 2.34 */
        for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
                if (gs_real_dlsym == NULL)
                        gs_real_dlsym = (void *(*)(void *, const char *))find_in_lib(libs[i], "dlsym");
                if (gs_real_dlvsym == NULL)
                        gs_real_dlvsym = (void *(*)(void *, const char *, const char *))find_in_lib(libs[i], "dlvsym");
        }
}

/* Our wrappers, by name. The launch hooks come last: they count only with a compute limit. */
#define GS_DECL_(name) extern __typeof__(name) name;
GS_VGPU_CUDA_HOOKS(GS_DECL_)
GS_VGPU_NVML_HOOKS(GS_DECL_)
GS_VGPU_LAUNCH_HOOKS(GS_DECL_)
#undef GS_DECL_

static const struct {
        const char *name;
        void *fn;
} wrappers[] = {
#define GS_ENTRY_(name) {#name, (void *)name},
        GS_VGPU_CUDA_HOOKS(GS_ENTRY_) GS_VGPU_NVML_HOOKS(GS_ENTRY_) GS_VGPU_LAUNCH_HOOKS(GS_ENTRY_)
#undef GS_ENTRY_
};

#define GS_COUNT_(name) +1
enum { GS_LAUNCH_HOOKS = 0 GS_VGPU_LAUNCH_HOOKS(GS_COUNT_) };
#undef GS_COUNT_

/* How many wrappers are handed out: all, or all but the launch hooks. */
static size_t nwrappers(void)
{
        size_t n = sizeof(wrappers) / sizeof(wrappers[0]);
        return gs_limiter_enabled ? n : n - GS_LAUNCH_HOOKS;
}

void *gs_vgpu_wrapper_by_name(const char *name)
{
        for (size_t i = 0; i < nwrappers(); i++)
                if (same_str(wrappers[i].name, name))
                        return wrappers[i].fn;
        return NULL;
}

/* Could the driver's answer for `symbol` (a base name such as "cuMemAlloc", as the CUDA runtime
 * asks) be one of our hooks, i.e. is some hook named symbol or symbol_<suffix>? Most of the
 * several hundred entry points a runtime fetches at start-up are not: they skip the lookup. */
static bool may_be_hooked(const char *symbol)
{
        if (symbol == NULL)
                return true;
        size_t len = strlen(symbol);
        for (size_t i = 0; i < nwrappers(); i++)
                if (strncmp(wrappers[i].name, symbol, len) == 0 &&
                    (wrappers[i].name[len] == '\0' || wrappers[i].name[len] == '_'))
                        return true;
        return false;
}

void *gs_vgpu_wrapper_for_real(const char *symbol, void *real)
{
        if (real == NULL || !may_be_hooked(symbol))
                return NULL;
        for (size_t i = 0; i < sizeof(wrappers) / sizeof(wrappers[0]); i++)
                if (wrappers[i].fn == real)
                        return real; /* already ours */
#define GS_MATCH_(name)                                                                              \
        if (gs_vgpu_state.cu.name != NULL && (void *)gs_vgpu_state.cu.name == real)                 \
                return (void *)name;
        GS_VGPU_CUDA_HOOKS(GS_MATCH_)
        if (gs_limiter_enabled) {
                GS_VGPU_LAUNCH_HOOKS(GS_MATCH_)
        }
#undef GS_MATCH_
        Dl_info info;
        if (dladdr(real, &info) != 0 && info.dli_saddr == real && info.dli_sname != NULL) {
                void *w = gs_vgpu_wrapper_by_name(info.dli_sname);
                if (w != NULL)
                        gs_vgpu_log(4, "%s: the driver's answer is %s (matched by name)", symbol ? symbol : "?",
                                    info.dli_sname);
                return w;
        }
        return NULL;
}

/* For the stub when dlsym is called before our constructors ran (a sanitizer runtime's early
 * init does that): resolve the real dlsym without touching the caller's arguments. */
__attribute__((visibility("hidden"), used)) void *gs_resolve_real_dlsym(void)
{
        if (gs_real_dlsym == NULL)
                resolve_dlsym();
        return (void *)gs_real_dlsym;
}

/* What a dlsym/dlvsym lookup found: our wrapper instead when the name is one of our hooks. */
static void *swap_found(const char *symbol, void *found)
{
        if (found == NULL || symbol == NULL)
                return found;
        /* no libc call: this can run inside a sanitizer runtime's start-up */
        if ((symbol[0] == 'c' && symbol[1] == 'u') ||
            (symbol[0] == 'n' && symbol[1] == 'v' && symbol[2] == 'm' && symbol[3] == 'l')) {
                void *w = gs_vgpu_wrapper_by_name(symbol);
                if (w != NULL)
                        return w;
        }
        return found;
}

__attribute__((visibility("hidden"), used)) void *gs_dlsym_impl(void *handle, const char *symbol)
{
        if (gs_real_dlsym == NULL)
                resolve_dlsym();
        if (gs_real_dlsym == NULL)
                return NULL;
        return swap_found(symbol, gs_real_dlsym(handle, symbol));
}

__attribute__((visibility("hidden"), used)) void *gs_resolve_real_dlvsym(void)
{
        if (gs_real_dlvsym == NULL)
                resolve_dlsym();
        return (void *)gs_real_dlvsym;
}

__attribute__((visibility("hidden"), used)) void *gs_dlvsym_impl(void *handle, const char *symbol, const char *version)
{
        if (gs_real_dlvsym == NULL)
                resolve_dlsym();
        if (gs_real_dlvsym == NULL)
                return NULL;
        return swap_found(symbol, gs_real_dlvsym(handle, symbol, version));
}

/* dlsym and dlvsym: RTLD_NEXT (-1) tail-jumps to the real function with the caller's return
 * address intact; anything else goes to the C implementation. */
#if defined(__x86_64__)
#define GS_STUB_(name, real, resolve, impl)                                                          \
        __asm__(".text\n"                                                                            \
                ".globl " #name "\n"                                                                 \
                ".type " #name ", @function\n"                                                       \
                ".p2align 4\n" #name ":\n"                                                           \
                "  endbr64\n"                                                                        \
                "  cmpq $-1, %rdi\n"                                                                 \
                "  jne " #impl "\n"                                                                  \
                "  movq " #real "(%rip), %rax\n"                                                     \
                "  testq %rax, %rax\n"                                                               \
                "  jne 1f\n"                                                                         \
                "  pushq %rdi\n"                                                                     \
                "  pushq %rsi\n"                                                                     \
                "  pushq %rdx\n"                                                                     \
                "  call " #resolve "\n"                                                              \
                "  popq %rdx\n"                                                                      \
                "  popq %rsi\n"                                                                      \
                "  popq %rdi\n"                                                                      \
                "  testq %rax, %rax\n"                                                               \
                "  je " #impl "\n"                                                                   \
                "1:\n"                                                                               \
                "  jmp *%rax\n"                                                                      \
                ".size " #name ", .-" #name "\n");
#elif defined(__aarch64__)
#define GS_STUB_(name, real, resolve, impl)                                                          \
        __asm__(".text\n"                                                                            \
                ".globl " #name "\n"                                                                 \
                ".type " #name ", %function\n"                                                       \
                ".p2align 4\n" #name ":\n"                                                           \
                "  cmn x0, #1\n"                                                                     \
                "  b.ne " #impl "\n"                                                                 \
                "  adrp x16, " #real "\n"                                                            \
                "  ldr x16, [x16, :lo12:" #real "]\n"                                                \
                "  cbnz x16, 1f\n"                                                                   \
                "  stp x0, x1, [sp, #-32]!\n"                                                        \
                "  stp x2, x30, [sp, #16]\n"                                                         \
                "  bl " #resolve "\n"                                                                \
                "  mov x16, x0\n"                                                                    \
                "  ldp x2, x30, [sp, #16]\n"                                                         \
                "  ldp x0, x1, [sp], #32\n"                                                          \
                "  cbz x16, " #impl "\n"                                                             \
                "1:\n"                                                                               \
                "  br x16\n"                                                                         \
                ".size " #name ", .-" #name "\n");
#else
#error "dlsym stub: add this architecture"
#endif
GS_STUB_(dlsym, gs_real_dlsym, gs_resolve_real_dlsym, gs_dlsym_impl)
GS_STUB_(dlvsym, gs_real_dlvsym, gs_resolve_real_dlvsym, gs_dlvsym_impl)


/* The driver answered a cuGetProcAddress(_v2): swap a hooked entry point for our wrapper. */
static CUresult swap_answer(CUresult rc, const char *symbol, void **pfn)
{
        if (rc == CUDA_SUCCESS && pfn != NULL && *pfn != NULL) {
                uint64_t t0 = gs_vgpu_clock();
                void *w = gs_vgpu_wrapper_for_real(symbol, *pfn);
                if (w != NULL)
                        *pfn = w;
                gs_vgpu_spent(GS_PHASE_PROCADDR, t0);
        }
        return rc;
}

GS_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
        if (gs_vgpu_load_cuda() < 0 || gs_vgpu_state.cu.cuGetProcAddress == NULL)
                return CUDA_ERROR_NOT_INITIALIZED;
        return swap_answer(gs_vgpu_state.cu.cuGetProcAddress(symbol, pfn, cudaVersion, flags), symbol, pfn);
}

GS_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
        if (gs_vgpu_load_cuda() < 0 || gs_vgpu_state.cu.cuGetProcAddress_v2 == NULL)
                return CUDA_ERROR_NOT_INITIALIZED;
        return swap_answer(gs_vgpu_state.cu.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus),
                           symbol, pfn);
}
