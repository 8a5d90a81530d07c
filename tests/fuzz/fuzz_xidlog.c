/* libFuzzer harness: the NVIDIA driver's XID lines as /dev/kmsg reads them (gs_xid_parse_kmsg): the
 * process's name and the driver's words in a record are printable ASCII, NUL-terminated, within
 * their arrays; only the kernel's facility (0) is ever taken. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "driver/xidlog.h"

static void printable(const char *s, size_t size)
{
        size_t n = strnlen(s, size);
        if (n == size)
                abort(); /* not terminated */
        for (size_t i = 0; i < n; i++)
                if (s[i] < 0x20 || s[i] >= 0x7f)
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *line = malloc(size + 1);
        if (line == NULL)
                return 0;
        memcpy(line, data, size);
        line[size] = '\0';
        struct gs_xid_record r;
        if (gs_xid_parse_kmsg(line, &r)) {
                printable(r.name, sizeof(r.name));
                printable(r.text, sizeof(r.text));
                if (r.pid < 0 || r.domain > 0xffff || r.bus > 0xff || r.device > 0x1f || strtoul(line, NULL, 10) >> 3 != 0)
                        abort();
        }
        free(line);
        return 0;
}
