/*
 * libFuzzer harness for the ld.so.cache reader: parse arbitrary bytes, then walk the entries of
 * both the host architecture and its 32-bit companion, touching every string handed out.
 * Build: CC=clang meson setup build-fuzz -Dfuzz=true && ninja -C build-fuzz tests/fuzz/fuzz_ldcache
 * Run:   build-fuzz/tests/fuzz/fuzz_ldcache tests/fuzz/corpus/ldcache
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "driver/ldcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static int touch(void *arg, const char *key, const char *value, int32_t flags)
{
        size_t *acc = arg;
        if ((flags & GS_LD_FLAG_ELF) == 0)
                abort(); /* foreach must have filtered it */
        *acc += strlen(key) + strlen(value) + 1;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct gs_ldcache c;
        struct gs_error err = {0};
        size_t acc = 0;

        if (gs_ldcache_parse(&c, data, size, &err) < 0) {
                if (err.code != GS_EFORMAT || memchr(err.msg, '\0', sizeof(err.msg)) == NULL)
                        abort();
                return 0;
        }
        if (c.hdr > size || c.map != data)
                abort();

        static const uint32_t arches[] = {GS_LD_ARCH_HOST, GS_LD_ARCH_HOST32};
        for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++) {
                /* entries were all validated by parse: walking cannot fail */
                if (gs_ldcache_foreach(&c, arches[i], touch, &acc, &err) < 0)
                        abort();
        }
        gs_ldcache_close(&c);
        sink = acc; /* keep the reads observable */
        return 0;
}
