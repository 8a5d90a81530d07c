/* The engines' TOML editor from the command line, for tests/unit/test_toml_edit.py (which reads
 * what it writes with python3's tomllib, a parser independent of it):
 *
 *   toml-probe FILE KEY VALUE [TABLE-PART...]
 *
 * prints gs_toml_set's text on stdout and "changed" or "unchanged" on stderr (exit 0), or its
 * refusal on stderr (exit 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

int main(int argc, char **argv)
{
        if (argc < 4) {
                fprintf(stderr, "usage: toml-probe FILE KEY VALUE [TABLE-PART...]\n");
                return 2;
        }
        FILE *f = fopen(argv[1], "rb");
        if (f == NULL) {
                perror(argv[1]);
                return 2;
        }
        static char text[1 << 20];
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = '\0';
        struct gs_error err = {0};
        bool changed = false;
        char *out = gs_toml_set(text, (const char *const *)argv + 4, (size_t)(argc - 4), argv[2], argv[3], &changed, &err);
        if (out == NULL) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
        }
        fputs(out, stdout);
        fprintf(stderr, "%s\n", changed ? "changed" : "unchanged");
        free(out);
        return 0;
}
