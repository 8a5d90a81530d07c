/* Requirement DSL internals (public entry points are in gpuslice.h). */
#ifndef GS_SELECT_REQUIRE_H
#define GS_SELECT_REQUIRE_H

/* Compare two dotted decimal versions ("12.4" vs "12"): components compared numerically, missing
 * trailing components count as 0. Returns <0, 0, >0; -2 if either is not [0-9.]+ (or empty). */
int gs_version_compare(const char *a, const char *b);

#endif
