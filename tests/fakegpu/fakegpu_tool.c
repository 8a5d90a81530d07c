/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fakegpu-tool: small helpers for mkroot.sh, so the builder needs no compiler or Python.
 *
 *   fakegpu-tool dump CONFIG            validate CONFIG with the fake NVML's own parser and
 *                                       print it in a line format easy to read from a shell:
 *                                         driver <version>
 *                                         cuda <int, e.g. 13000>
 *                                         gpu <index> <minor> <dddd:bb:dd.f> <uuid> <name...>
 *                                         mig <gpu index> <gpu minor> <gi> <ci> <uuid>
 *   fakegpu-tool set-soname FILE NAME   rewrite the DT_SONAME string of an ELF shared object in
 *                                       place (NAME must not be longer than the current one)
 *   fakegpu-tool mksock PATH            create a unix stream socket file at PATH
 *   fakegpu-tool chroot-nvml ROOT       (root only) chroot into ROOT, dlopen libnvidia-ml.so.1
 *                                       through ROOT's ld.so.cache as the gpuslice NVML helper
 *                                       does, and print "<index> <uuid> <name>" per GPU
 */
#define GS_NVML_NO_PROTOTYPES
#include "abi/nvml.h"
#include "fakegpu_config.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int dump(const char *path)
{
    static struct fg_config cfg;
    char err[512];

    if (fg_config_load(path, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "fakegpu-tool: %s\n", err);
        return 1;
    }
    printf("driver %s\n", cfg.driver);
    printf("cuda %d\n", cfg.cuda);
    for (unsigned i = 0; i < cfg.ngpus; i++) {
        const struct fg_gpu *g = &cfg.gpus[i];

        printf("gpu %u %u %04x:%02x:%02x.%x %s %s\n", i, g->minor, g->domain, g->bus, g->device,
               g->function, g->uuid, g->name);
        if (g->mig != FG_MIG_UNSUPPORTED)
            printf("migcap %u %u\n", i, g->minor);
        for (unsigned j = 0; j < g->nmig; j++)
            printf("mig %u %u %u %u %s\n", i, g->minor, g->migs[j].gi, g->migs[j].ci, g->migs[j].uuid);
    }
    return 0;
}

/* ELF fields read generically for 32- and 64-bit little-endian objects. */
struct elf {
    int fd;
    int is64;
    off_t size;
};

static int rd(const struct elf *e, void *buf, size_t len, uint64_t off)
{
    if (off > (uint64_t)e->size || len > (uint64_t)e->size - off)
        return -1;
    return pread(e->fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -1;
}

struct phdr {
    uint32_t type;
    uint64_t offset, vaddr, filesz;
};

static int get_phdr(const struct elf *e, uint64_t phoff, unsigned i, unsigned entsize, struct phdr *ph)
{
    if (e->is64) {
        Elf64_Phdr p;

        if (entsize < sizeof(p) || rd(e, &p, sizeof(p), phoff + (uint64_t)i * entsize) < 0)
            return -1;
        *ph = (struct phdr){ p.p_type, p.p_offset, p.p_vaddr, p.p_filesz };
    } else {
        Elf32_Phdr p;

        if (entsize < sizeof(p) || rd(e, &p, sizeof(p), phoff + (uint64_t)i * entsize) < 0)
            return -1;
        *ph = (struct phdr){ p.p_type, p.p_offset, p.p_vaddr, p.p_filesz };
    }
    return 0;
}

static int set_soname(const char *file, const char *name)
{
    struct elf e = { .fd = -1 };
    unsigned char ident[EI_NIDENT];
    uint64_t phoff, strtab = 0, soname = UINT64_MAX, str_off = UINT64_MAX;
    unsigned phnum, phentsize;
    struct phdr dyn = { 0 };
    int have_dyn = 0, rc = 1;
    struct stat st;
    char old[512];
    size_t oldlen, newlen = strlen(name);

    e.fd = open(file, O_RDWR | O_CLOEXEC);
    if (e.fd < 0 || fstat(e.fd, &st) < 0) {
        fprintf(stderr, "fakegpu-tool: %s: %s\n", file, strerror(errno));
        goto out;
    }
    e.size = st.st_size;
    if (rd(&e, ident, sizeof(ident), 0) < 0 || memcmp(ident, ELFMAG, SELFMAG) != 0 ||
        ident[EI_DATA] != ELFDATA2LSB || (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64)) {
        fprintf(stderr, "fakegpu-tool: %s: not a little-endian ELF file\n", file);
        goto out;
    }
    e.is64 = ident[EI_CLASS] == ELFCLASS64;
    if (e.is64) {
        Elf64_Ehdr h;

        if (rd(&e, &h, sizeof(h), 0) < 0)
            goto bad;
        phoff = h.e_phoff, phnum = h.e_phnum, phentsize = h.e_phentsize;
    } else {
        Elf32_Ehdr h;

        if (rd(&e, &h, sizeof(h), 0) < 0)
            goto bad;
        phoff = h.e_phoff, phnum = h.e_phnum, phentsize = h.e_phentsize;
    }
    for (unsigned i = 0; i < phnum; i++) {
        struct phdr ph;

        if (get_phdr(&e, phoff, i, phentsize, &ph) < 0)
            goto bad;
        if (ph.type == PT_DYNAMIC) {
            dyn = ph;
            have_dyn = 1;
        }
    }
    if (!have_dyn)
        goto bad;
    /* Walk the dynamic section for DT_STRTAB and DT_SONAME. */
    for (uint64_t off = dyn.offset; off < dyn.offset + dyn.filesz;) {
        int64_t tag;
        uint64_t val;

        if (e.is64) {
            Elf64_Dyn d;

            if (rd(&e, &d, sizeof(d), off) < 0)
                goto bad;
            tag = d.d_tag, val = d.d_un.d_val, off += sizeof(d);
        } else {
            Elf32_Dyn d;

            if (rd(&e, &d, sizeof(d), off) < 0)
                goto bad;
            tag = d.d_tag, val = d.d_un.d_val, off += sizeof(d);
        }
        if (tag == DT_NULL)
            break;
        if (tag == DT_STRTAB)
            strtab = val;
        else if (tag == DT_SONAME)
            soname = val;
    }
    if (soname == UINT64_MAX || strtab == 0) {
        fprintf(stderr, "fakegpu-tool: %s: no DT_SONAME\n", file);
        goto out;
    }
    /* DT_STRTAB is an address: map it to a file offset through the PT_LOAD segments. */
    for (unsigned i = 0; i < phnum; i++) {
        struct phdr ph;

        if (get_phdr(&e, phoff, i, phentsize, &ph) < 0)
            goto bad;
        if (ph.type == PT_LOAD && strtab >= ph.vaddr && strtab < ph.vaddr + ph.filesz)
            str_off = ph.offset + (strtab - ph.vaddr) + soname;
    }
    if (str_off == UINT64_MAX)
        goto bad;
    memset(old, 0, sizeof(old));
    if (rd(&e, old, sizeof(old) - 1, str_off) < 0 && rd(&e, old, 1, str_off) < 0)
        goto bad;
    oldlen = strnlen(old, sizeof(old));
    if (newlen == 0 || newlen > oldlen) {
        fprintf(stderr, "fakegpu-tool: %s: new SONAME '%s' longer than the current '%s'\n", file, name, old);
        goto out;
    }
    {
        char buf[sizeof(old)];

        memset(buf, 0, sizeof(buf));
        memcpy(buf, name, newlen);
        if (pwrite(e.fd, buf, oldlen, (off_t)str_off) != (ssize_t)oldlen) {
            fprintf(stderr, "fakegpu-tool: %s: write: %s\n", file, strerror(errno));
            goto out;
        }
    }
    rc = 0;
    goto out;
bad:
    fprintf(stderr, "fakegpu-tool: %s: malformed or unsupported ELF file\n", file);
out:
    if (e.fd >= 0)
        close(e.fd);
    return rc;
}

static int mksock(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "fakegpu-tool: %s: path too long for a unix socket\n", path);
        return 1;
    }
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "fakegpu-tool: %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    close(fd);
    return 0;
}

static int chroot_nvml(const char *root)
{
    void *h;
    gs_nvmlInit_v2_fn init;
    gs_nvmlShutdown_fn shutdown;
    gs_nvmlDeviceGetCount_v2_fn count;
    gs_nvmlDeviceGetHandleByIndex_v2_fn by_index;
    gs_nvmlDeviceGetUUID_fn get_uuid;
    gs_nvmlDeviceGetName_fn get_name;
    nvmlReturn_t rc;
    unsigned n = 0;

    if (chroot(root) < 0 || chdir("/") < 0) {
        fprintf(stderr, "fakegpu-tool: chroot %s: %s\n", root, strerror(errno));
        return 1;
    }
    h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "fakegpu-tool: dlopen libnvidia-ml.so.1 in %s: %s\n", root, dlerror());
        _exit(1); /* no atexit/LSan in ROOT */
    }
    *(void **)&init = dlsym(h, "nvmlInit_v2");
    *(void **)&shutdown = dlsym(h, "nvmlShutdown");
    *(void **)&count = dlsym(h, "nvmlDeviceGetCount_v2");
    *(void **)&by_index = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&get_uuid = dlsym(h, "nvmlDeviceGetUUID");
    *(void **)&get_name = dlsym(h, "nvmlDeviceGetName");
    if (init == NULL || shutdown == NULL || count == NULL || by_index == NULL || get_uuid == NULL ||
        get_name == NULL) {
        fprintf(stderr, "fakegpu-tool: the libnvidia-ml.so.1 found in %s lacks NVML entry points\n", root);
        _exit(1);
    }
    rc = init();
    if (rc != NVML_SUCCESS) {
        fprintf(stderr, "fakegpu-tool: nvmlInit_v2: error %d\n", rc);
        _exit(1);
    }
    count(&n);
    for (unsigned i = 0; i < n; i++) {
        nvmlDevice_t d;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "", name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "";

        if (by_index(i, &d) == NVML_SUCCESS && get_uuid(d, uuid, sizeof(uuid)) == NVML_SUCCESS &&
            get_name(d, name, sizeof(name)) == NVML_SUCCESS)
            printf("%u %s %s\n", i, uuid, name);
    }
    shutdown();
    /* Leave without atexit handlers: LeakSanitizer (ASan builds) needs /proc, absent in ROOT. */
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return dump(argv[2]);
    if (argc == 4 && strcmp(argv[1], "set-soname") == 0)
        return set_soname(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "mksock") == 0)
        return mksock(argv[2]);
    if (argc == 3 && strcmp(argv[1], "chroot-nvml") == 0)
        return chroot_nvml(argv[2]);
    fprintf(stderr, "usage: fakegpu-tool dump CONFIG | set-soname FILE NAME | mksock PATH | chroot-nvml ROOT\n");
    return 2;
}
