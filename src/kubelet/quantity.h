/*
 * Kubernetes resource quantities (k8s.io/apimachinery resource.Quantity), as the API server writes
 * them in a ResourceClaim's consumedCapacity and as a ResourceSlice's capacity takes them: a
 * decimal number (optional fraction) and a suffix: binary Ki Mi Gi Ti Pi Ei, decimal k M G T P E
 * or m (milli), or an exponent e<N>/E<N>. Only non-negative values; a fraction is rounded up to
 * a whole unit (a quantity of bytes or percent is whole).
 */
#ifndef GS_KUBELET_QUANTITY_H
#define GS_KUBELET_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

#include <gpuslice/gpuslice.h>

/* The value of `s`, rounded up; -1 with err (GS_EINVAL) for anything else or past 2^63. */
int gs_k8s_quantity_parse(const char *s, uint64_t *out, struct gs_error *err);
/* "<n>Gi" / "<n>Mi" / "<n>Ki" when exact, else the plain number. */
void gs_k8s_quantity_format(uint64_t v, char *buf, size_t len);

#endif
