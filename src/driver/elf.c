/*
 * Minimal ELF inspection with pread (no libelf, no mmap): header class/machine and the GNU ABI tag
 * note of the PT_NOTE segments. Layouts come from the system's <elf.h> (the ELF gABI types).
 *
 * Scope and limits, on purpose:
 * - little-endian files only (every architecture we support is little-endian); a big-endian file
 *   is reported as is_elf = false;
 * - EI_VERSION must be EV_CURRENT and e_phentsize at least the size of a program header;
 * - the program header table must lie inside the file, otherwise the file is not a usable ELF
 *   object and is reported as is_elf = false;
 * - at most GS_ELF_MAX_PHDRS program headers are walked (PN_XNUM extended counts are not
 *   followed); at most GS_ELF_MAX_NOTE bytes of each PT_NOTE segment are read, and a PT_NOTE that
 *   does not lie inside the file is skipped;
 * - only an NT_GNU_ABI_TAG note whose OS word is 0 (Linux) sets has_abi_tag.
 */
#include "driver/elf.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"

#define GS_ELF_MAX_PHDRS 64u
#define GS_ELF_MAX_PHENTSIZE 1024u
#define GS_ELF_MAX_NOTE ((size_t)64 * 1024)

/* Read exactly len bytes at off: 1 when done, 0 when the file ends first, -1 on error. */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
        uint8_t *p = buf;
        while (len > 0) {
                if (off > (uint64_t)INT64_MAX)
                        return 0;
                ssize_t n = pread(fd, p, len, (off_t)off);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                if (n == 0)
                        return 0;
                p += n;
                len -= (size_t)n;
                off += (uint64_t)n;
        }
        return 1;
}

/* One program header, whatever the class. */
struct phdr {
        uint32_t type;
        uint64_t offset;
        uint64_t filesz;
        uint64_t align;
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
        return (v + a - 1) & ~(a - 1);
}

/* Walk the notes of one segment image for NT_GNU_ABI_TAG (name "GNU\0"). */
static void scan_notes(const uint8_t *buf, size_t len, uint64_t align, struct gs_elf_info *out)
{
        size_t pos = 0;
        while (len - pos >= 12) {
                uint32_t namesz, descsz, type;
                memcpy(&namesz, buf + pos, 4);
                memcpy(&descsz, buf + pos + 4, 4);
                memcpy(&type, buf + pos + 8, 4);
                uint64_t name_off = pos + 12;
                uint64_t desc_off = align_up(name_off + namesz, align);
                uint64_t next = align_up(desc_off + descsz, align);
                if (desc_off + descsz > len)
                        return; /* truncated note: stop */
                if (type == NT_GNU_ABI_TAG && namesz == 4 && memcmp(buf + name_off, "GNU", 4) == 0 &&
                    descsz >= 16) {
                        uint32_t w[4];
                        memcpy(w, buf + desc_off, sizeof(w));
                        if (w[0] == ELF_NOTE_OS_LINUX) {
                                out->has_abi_tag = true;
                                out->abi[0] = w[1];
                                out->abi[1] = w[2];
                                out->abi[2] = w[3];
                                return;
                        }
                }
                if (next <= pos || next > len)
                        return;
                pos = (size_t)next;
        }
}

int gs_elf_inspect(int fd, struct gs_elf_info *out, struct gs_error *err)
{
        struct stat st;
        unsigned char ident[EI_NIDENT];
        uint64_t phoff;
        uint32_t phentsize, phnum, min_phentsize;
        uint16_t machine;
        bool is_64;
        int r;

        memset(out, 0, sizeof(*out));
        if (fstat(fd, &st) < 0)
                return gs_error_sys(err, "cannot stat ELF candidate");
        if (!S_ISREG(st.st_mode) || st.st_size < 0)
                return 0;
        uint64_t fsize = (uint64_t)st.st_size;

        r = read_at(fd, ident, sizeof(ident), 0);
        if (r < 0)
                return gs_error_sys(err, "cannot read ELF header");
        if (r == 0 || memcmp(ident, ELFMAG, SELFMAG) != 0)
                return 0;
        if (ident[EI_DATA] != ELFDATA2LSB || ident[EI_VERSION] != EV_CURRENT)
                return 0;

        if (ident[EI_CLASS] == ELFCLASS64) {
                Elf64_Ehdr eh;
                if (fsize < sizeof(eh))
                        return 0;
                r = read_at(fd, &eh, sizeof(eh), 0);
                if (r <= 0)
                        return r < 0 ? gs_error_sys(err, "cannot read ELF header") : 0;
                is_64 = true;
                machine = eh.e_machine;
                phoff = eh.e_phoff;
                phentsize = eh.e_phentsize;
                phnum = eh.e_phnum;
                min_phentsize = sizeof(Elf64_Phdr);
        } else if (ident[EI_CLASS] == ELFCLASS32) {
                Elf32_Ehdr eh;
                if (fsize < sizeof(eh))
                        return 0;
                r = read_at(fd, &eh, sizeof(eh), 0);
                if (r <= 0)
                        return r < 0 ? gs_error_sys(err, "cannot read ELF header") : 0;
                is_64 = false;
                machine = eh.e_machine;
                phoff = eh.e_phoff;
                phentsize = eh.e_phentsize;
                phnum = eh.e_phnum;
                min_phentsize = sizeof(Elf32_Phdr);
        } else {
                return 0;
        }

        /* The whole program header table must lie inside the file (64-bit sums cannot wrap:
         * phnum * phentsize < 2^32, and phoff is checked against the size first). */
        if (phnum != 0 && (phentsize < min_phentsize || phentsize > GS_ELF_MAX_PHENTSIZE ||
                           phoff > fsize || (uint64_t)phnum * phentsize > fsize - phoff))
                return 0;
        out->is_elf = true;
        out->is_64 = is_64;
        out->machine = machine;

        if (phnum > GS_ELF_MAX_PHDRS)
                phnum = GS_ELF_MAX_PHDRS;
        gs_autofree uint8_t *buf = NULL; /* note segment image, allocated on first PT_NOTE */
        for (uint32_t i = 0; i < phnum; i++) {
                uint64_t at = phoff + (uint64_t)i * phentsize;
                struct phdr ph;
                if (out->is_64) {
                        Elf64_Phdr p;
                        r = read_at(fd, &p, sizeof(p), at);
                        ph = (struct phdr){p.p_type, p.p_offset, p.p_filesz, p.p_align};
                } else {
                        Elf32_Phdr p;
                        r = read_at(fd, &p, sizeof(p), at);
                        ph = (struct phdr){p.p_type, p.p_offset, p.p_filesz, p.p_align};
                }
                if (r < 0)
                        return gs_error_sys(err, "cannot read ELF program headers");
                if (r == 0)
                        break; /* file shrank under us */
                if (ph.type != PT_NOTE || ph.filesz < 12)
                        continue;
                if (ph.offset > fsize || ph.filesz > fsize - ph.offset)
                        continue;

                size_t len = ph.filesz > GS_ELF_MAX_NOTE ? GS_ELF_MAX_NOTE : (size_t)ph.filesz;
                if (buf == NULL) {
                        buf = malloc(GS_ELF_MAX_NOTE);
                        if (buf == NULL)
                                return gs_error_set(err, GS_ENOMEM, "out of memory");
                }
                r = read_at(fd, buf, len, ph.offset);
                if (r < 0)
                        return gs_error_sys(err, "cannot read ELF notes");
                if (r == 0)
                        continue;
                /* Notes are 4-byte aligned, except in segments aligned to 8 (gABI). */
                scan_notes(buf, len, ph.align == 8 ? 8 : 4, out);
                if (out->has_abi_tag)
                        break;
        }
        return 0;
}

bool gs_elf_matches_arch(const struct gs_elf_info *info, bool want32)
{
        if (info == NULL || !info->is_elf)
                return false;
#if defined(__x86_64__)
        return want32 ? (!info->is_64 && info->machine == EM_386)
                      : (info->is_64 && info->machine == EM_X86_64);
#elif defined(__aarch64__)
        return want32 ? (!info->is_64 && info->machine == EM_ARM)
                      : (info->is_64 && info->machine == EM_AARCH64);
#elif defined(__powerpc64__)
        return want32 ? false : (info->is_64 && info->machine == EM_PPC64);
#else
#error "unsupported architecture"
#endif
}

bool gs_elf_abi_at_least(const struct gs_elf_info *info, uint32_t major, uint32_t minor,
                         uint32_t patch)
{
        if (info == NULL || !info->is_elf || !info->has_abi_tag)
                return false;
        const uint32_t want[3] = {major, minor, patch};
        for (int i = 0; i < 3; i++) {
                if (info->abi[i] != want[i])
                        return info->abi[i] > want[i];
        }
        return true;
}
