/* SPDX-License-Identifier: Apache-2.0 */
/* Stand-in for the driver's other binaries (nvidia-debugdump, nvidia-persistenced) in a fake
 * driver root; the MPS ones are simulated (fake_mps_control.c). */
#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argc;
    printf("%s: fakegpu stand-in\n", argv[0] != NULL ? argv[0] : "stub");
    return 0;
}
