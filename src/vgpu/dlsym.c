/*
 * Entry-point redirection.
 *
 * dlsym: the CUDA runtime and frameworks dlopen libcuda.so.1 / libnvidia-ml.so.1 and dlsym their
 * entry points by handle, which ELF interposition does not catch. Our dlsym returns our wrapper
 * for a hooked name whenever the real lookup finds the symbol. RTLD_NEXT must stay relative to the
 * *caller*, which glibc derives from the return address: so dlsym is a tiny assembly stub that
 * tail-jumps to the real dlsym for RTLD_NEXT (the caller's return address is untouched) and calls
 * our C code otherwise. dlvsym is not overridden.
 *
 * cuGetProcAddress(_v2): the driver picks the ABI variant for the caller's cudaVersion and flags
 * (per-thread default stream included); we ask it, then swap its answer for our wrapper of exactly
 * that variant (matched by address, or by the exported name dladdr gives for that address). A
 * variant we do not wrap is returned as the driver gave it.
 */

#include <dlfcn.h>
#include <string.h>

#include "vgpu/hooks.h"
#include "vgpu/vgpu.h"

void *(*gs_real_dlsym)(void *, const char *) = NULL;

__attribute__((constructor(101))) static void resolve_dlsym(void)
{
        static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"};
        for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]) && gs_real_dlsym == NULL; i++)
                gs_real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", versions[i]);
}

/* Our wrappers, by name. */
#define GS_DECL_(name) extern __typeof__(name) name;
GS_VGPU_CUDA_HOOKS(GS_DECL_)
GS_VGPU_NVML_HOOKS(GS_DECL_)
#undef GS_DECL_

static const struct {
        const char *name;
        void *fn;
} wrappers[] = {
#define GS_ENTRY_(name) {#name, (void *)name},
        GS_VGPU_CUDA_HOOKS(GS_ENTRY_) GS_VGPU_NVML_HOOKS(GS_ENTRY_)
#undef GS_ENTRY_
};

void *gs_vgpu_wrapper_by_name(const char *name)
{
        for (size_t i = 0; i < sizeof(wrappers) / sizeof(wrappers[0]); i++)
                if (strcmp(wrappers[i].name, name) == 0)
                        return wrappers[i].fn;
        return NULL;
}

void *gs_vgpu_wrapper_for_real(void *real)
{
        if (real == NULL)
                return NULL;
        for (size_t i = 0; i < sizeof(wrappers) / sizeof(wrappers[0]); i++)
                if (wrappers[i].fn == real)
                        return real; /* already ours */
#define GS_MATCH_(name)                                                                              \
        if (gs_vgpu_state.cu.name != NULL && (void *)gs_vgpu_state.cu.name == real)                 \
                return (void *)name;
        GS_VGPU_CUDA_HOOKS(GS_MATCH_)
#undef GS_MATCH_
        Dl_info info;
        if (dladdr(real, &info) != 0 && info.dli_saddr == real && info.dli_sname != NULL)
                return gs_vgpu_wrapper_by_name(info.dli_sname);
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

__attribute__((visibility("hidden"), used)) void *gs_dlsym_impl(void *handle, const char *symbol)
{
        if (gs_real_dlsym == NULL)
                resolve_dlsym();
        if (gs_real_dlsym == NULL)
                return NULL;
        void *r = gs_real_dlsym(handle, symbol);
        if (r == NULL || symbol == NULL)
                return r;
        if ((symbol[0] == 'c' && symbol[1] == 'u') || strncmp(symbol, "nvml", 4) == 0) {
                void *w = gs_vgpu_wrapper_by_name(symbol);
                if (w != NULL)
                        return w;
        }
        return r;
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        ".p2align 4\n"
        "dlsym:\n"
        "  endbr64\n"
        "  cmpq $-1, %rdi\n" /* RTLD_NEXT */
        "  jne gs_dlsym_impl\n"
        "  movq gs_real_dlsym(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jne 1f\n"
        "  pushq %rdi\n" /* not resolved yet: resolve, keeping the arguments */
        "  pushq %rsi\n"
        "  subq $8, %rsp\n"
        "  call gs_resolve_real_dlsym\n"
        "  addq $8, %rsp\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "  testq %rax, %rax\n"
        "  je gs_dlsym_impl\n"
        "1:\n"
        "  jmp *%rax\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        ".p2align 4\n"
        "dlsym:\n"
        "  cmn x0, #1\n"
        "  b.ne gs_dlsym_impl\n"
        "  adrp x16, gs_real_dlsym\n"
        "  ldr x16, [x16, :lo12:gs_real_dlsym]\n"
        "  cbnz x16, 1f\n"
        "  stp x0, x1, [sp, #-32]!\n"
        "  str x30, [sp, #16]\n"
        "  bl gs_resolve_real_dlsym\n"
        "  mov x16, x0\n"
        "  ldr x30, [sp, #16]\n"
        "  ldp x0, x1, [sp], #32\n"
        "  cbz x16, gs_dlsym_impl\n"
        "1:\n"
        "  br x16\n"
        ".size dlsym, .-dlsym\n");
#else
#error "dlsym stub: add this architecture"
#endif

GS_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
        if (gs_vgpu_load_cuda() < 0 || gs_vgpu_state.cu.cuGetProcAddress == NULL)
                return CUDA_ERROR_NOT_INITIALIZED;
        CUresult rc = gs_vgpu_state.cu.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
        if (rc == CUDA_SUCCESS && pfn != NULL && *pfn != NULL) {
                void *w = gs_vgpu_wrapper_for_real(*pfn);
                if (w != NULL)
                        *pfn = w;
        }
        return rc;
}

GS_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
        if (gs_vgpu_load_cuda() < 0 || gs_vgpu_state.cu.cuGetProcAddress_v2 == NULL)
                return CUDA_ERROR_NOT_INITIALIZED;
        CUresult rc = gs_vgpu_state.cu.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
        if (rc == CUDA_SUCCESS && pfn != NULL && *pfn != NULL) {
                void *w = gs_vgpu_wrapper_for_real(*pfn);
                if (w != NULL)
                        *pfn = w;
        }
        return rc;
}
