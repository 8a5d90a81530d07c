/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stand-in for libnvidia-tls.so.<version>. Like stub_lib.c, plus the property driver
 * discovery checks on this library: an ELF note NT_GNU_ABI_TAG (type 1, owner "GNU") saying
 * OS Linux (0), ABI 2.3.99, in an allocated SHT_NOTE section, which the linker places in a
 * PT_NOTE segment.
 */
__asm__(".section .note.ABI-tag, \"a\", @note\n"
        "\t.p2align 2\n"
        "\t.long 4\n"             /* namesz: "GNU\0" */
        "\t.long 16\n"            /* descsz: four words */
        "\t.long 1\n"             /* type: NT_GNU_ABI_TAG */
        "\t.asciz \"GNU\"\n"
        "\t.long 0, 2, 3, 99\n"   /* OS Linux, ABI 2.3.99 */
        "\t.previous\n");

__attribute__((visibility("default"))) int fakegpu_stub_tls(void);

int fakegpu_stub_tls(void)
{
    return 0;
}
