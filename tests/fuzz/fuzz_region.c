/* libFuzzer harness: the observer's region reader, collector and exposition on hostile region
 * files. Each input becomes a region file: as it is when its first byte is even; when it is odd
 * (as in the magic), a region of the size of its version field (2: version 2's, else version
 * 3's) with the input at offset 0, except that an input longer than a header plus a counters
 * area puts its last GS_REGION_COUNTERS_SIZE bytes into the counters area (so that small inputs
 * reach the slots and the counters both). The file is scanned twice by a collector (a window
 * closes), the result rendered; the same bytes go through gs_region_image_parse. Checks: a
 * refusal always says why; an accepted region keeps its bounds; the exposition is valid UTF-8,
 * every line a comment or a well-formed sample, nothing unescaped. */
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "observe/collect.h"
#include "observe/metrics.h"
#include "observe/prom.h"
#include "observe/region_read.h"

static bool name_char(char c, bool first)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

/* A sample line: name{label="value",...} value */
static bool sample_ok(const char *l, const char *end)
{
        const char *p = l;
        if (p == end || !name_char(*p, true))
                return false;
        while (p < end && name_char(*p, false))
                p++;
        if (p < end && *p == '{') {
                p++;
                while (p < end && *p != '}') {
                        if (!name_char(*p, true) || *p == ':')
                                return false;
                        while (p < end && name_char(*p, false) && *p != ':')
                                p++;
                        if (end - p < 2 || p[0] != '=' || p[1] != '"')
                                return false;
                        for (p += 2; p < end && *p != '"'; p++)
                                if (*p == '\\' && (++p == end || (*p != '\\' && *p != '"' && *p != 'n')))
                                        return false;
                        if (p == end)
                                return false;
                        p++;
                        if (p < end && *p == ',')
                                p++;
                }
                if (p == end)
                        return false;
                p++;
        }
        if (p == end || *p != ' ' || p + 1 == end)
                return false;
        for (p++; p < end; p++)
                if (*p == ' ')
                        return false;
        return true;
}

static void check_text(const char *t, size_t len)
{
        if (len == 0 || t[len - 1] != '\n' || strlen(t) != len)
                abort();
        char tmp[8];
        for (const char *l = t; l < t + len;) {
                const char *end = memchr(l, '\n', (size_t)(t + len - l));
                if (!(strncmp(l, "# HELP ", 7) == 0 || strncmp(l, "# TYPE ", 7) == 0 || sample_ok(l, end)))
                        abort();
                l = end + 1;
        }
        /* valid UTF-8 throughout: escaping it again changes nothing but the escapes */
        for (const unsigned char *u = (const unsigned char *)t; *u; u++)
                if (*u >= 0x80) {
                        char one[5] = {0};
                        size_t n = (*u >= 0xf0) ? 4 : (*u >= 0xe0) ? 3 : 2;
                        memcpy(one, u, n);
                        if (strcmp(gs_prom_escape_value(one, tmp, sizeof(tmp)), one) != 0)
                                abort();
                        u += n - 1;
                }
}

static char path[64];

/* The file an input stands for (see above) in buf (GS_REGION_SIZE bytes); its length. */
static size_t make_file(const uint8_t *data, size_t size, uint8_t *buf)
{
        if (size == 0 || !(data[0] & 1)) {
                size_t n = size < GS_REGION_SIZE ? size : GS_REGION_SIZE;
                memcpy(buf, data, n);
                return n;
        }
        uint32_t version = 0;
        if (size >= 12)
                memcpy(&version, data + 8, sizeof(version));
        size_t flen = version == GS_REGION_VERSION_2 ? GS_REGION_SIZE_V2 : GS_REGION_SIZE;
        memset(buf, 0, flen);
        size_t head = size, tail = 0;
        if (flen == GS_REGION_SIZE && size > GS_REGION_HEADER_SIZE + GS_REGION_COUNTERS_SIZE) {
                head = size - GS_REGION_COUNTERS_SIZE;
                tail = GS_REGION_COUNTERS_SIZE;
        }
        memcpy(buf, data, head < GS_REGION_COUNTERS_OFFSET ? head : GS_REGION_COUNTERS_OFFSET);
        memcpy(buf + GS_REGION_COUNTERS_OFFSET, data + head, tail);
        return flen;
}

static void remove_file(void)
{
        unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct gs_collector *c;
        static struct gs_region_image img;
        static uint8_t file[GS_REGION_SIZE];
        if (c == NULL) {
                snprintf(path, sizeof(path), "/tmp/fuzz-region-%d", (int)getpid());
                const char *regs[] = {path};
                struct gs_collector_opts o = {.regions_dir = "", .regions = regs, .nregions = 1};
                struct gs_error e = {0};
                if ((c = gs_collector_new(&o, &e)) == NULL)
                        abort();
                atexit(remove_file);
        }
        size_t flen = make_file(data, size, file);
        struct gs_error err = {0};
        int rc = gs_region_image_parse(file, flen, &img, &err);
        if (rc != 0 && err.msg[0] == '\0')
                abort();
        if (rc == 0 && (img.nslots > GS_REGION_MAX_PROCS || img.hdr.ndevices < 1 || img.hdr.ndevices > GS_REGION_MAX_DEVICES ||
                        img.counters != (img.hdr.version == GS_REGION_VERSION) ||
                        (img.ctr.priority > GS_REGION_PRIO_LOW && img.ctr.priority != GS_REGION_UNSET)))
                abort();
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return 0;
        if (write(fd, file, flen) != (ssize_t)flen) {
                close(fd);
                return 0;
        }
        close(fd);
        static uint64_t now = 1000000000ull;
        struct gs_metrics_opts mo = {.hami = true, .node = "n"};
        for (int pass = 0; pass < 2; pass++) {
                struct gs_observation obs;
                now += 2000000000ull;
                if (gs_collector_scan_at(c, now, &obs, &err) < 0)
                        abort();
                if (obs.nslices > 1 || (obs.nslices == 1 && obs.slices[0].ndevices > GS_REGION_MAX_DEVICES))
                        abort();
                /* a shown histogram is cumulative and ends at its count */
                for (unsigned d = 0; obs.nslices == 1 && d < obs.slices[0].ndevices; d++) {
                        const struct gs_obs_device *dv = &obs.slices[0].dev[d];
                        for (unsigned i = 1; dv->waits_known && i < GS_REGION_WAIT_BUCKETS; i++)
                                if (dv->waits.cum[i] < dv->waits.cum[i - 1])
                                        abort();
                        if (dv->waits_known && dv->waits.count != dv->waits.cum[GS_REGION_WAIT_BUCKETS - 1])
                                abort();
                }
                struct gs_prom p;
                gs_prom_init(&p);
                gs_metrics_render(&obs, NULL, &mo, &p);
                size_t len;
                char *t = gs_prom_take(&p, &len);
                if (t == NULL)
                        abort();
                check_text(t, len);
                free(t);
                gs_observation_release(&obs);
        }
        return 0;
}
