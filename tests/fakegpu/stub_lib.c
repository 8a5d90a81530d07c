/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stand-in for the NVIDIA driver libraries other than NVML (libcuda, libnvidia-ptxjitcompiler,
 * libGLX_nvidia, ...) in a fake driver root. It only has to be a well-formed ELF shared object:
 * mkroot.sh copies it under each library's versioned file name and sets each copy's SONAME
 * with `fakegpu-tool set-soname` (the link-time SONAME is a long placeholder for that).
 */
__attribute__((visibility("default"))) int fakegpu_stub_library(void);

int fakegpu_stub_library(void)
{
    return 0;
}
