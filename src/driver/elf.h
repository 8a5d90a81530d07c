/* Minimal ELF checks for driver library selection (no libelf): is it an ELF shared object of the
 * expected class/machine, does it carry a GNU ABI tag note >= a version, does it need a library. */
#ifndef GS_DRIVER_ELF_H
#define GS_DRIVER_ELF_H

#include <stdbool.h>
#include <stdint.h>

#include <gpuslice/gpuslice.h>

struct gs_elf_info {
        bool is_elf;          /* valid ELF header */
        bool is_64;           /* ELFCLASS64 */
        uint16_t machine;     /* e_machine */
        bool has_abi_tag;     /* NT_GNU_ABI_TAG note present (OS 0 = Linux) */
        uint32_t abi[3];      /* its version triple */
};

/* Read the header and the PT_NOTE segments of the file open at `fd` (pread only; offset untouched).
 * Returns 0 and fills `out` (is_elf false for a non-ELF file); -1 only on an I/O error.
 * Every offset read from the file is bounds-checked against the file size. */
int gs_elf_inspect(int fd, struct gs_elf_info *out, struct gs_error *err);

/* True if the inspected file is an ELF object for this process's architecture (64-bit pass) or its
 * 32-bit companion (i386 on x86_64) when `want32`. */
bool gs_elf_matches_arch(const struct gs_elf_info *info, bool want32);

/* Compare the ABI tag with a minimum version triple; false when there is no tag. */
bool gs_elf_abi_at_least(const struct gs_elf_info *info, uint32_t major, uint32_t minor, uint32_t patch);

#endif
