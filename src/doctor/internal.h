/* gpuslice doctor, inside: what the checks share, and the checks themselves. */
#ifndef GS_DOCTOR_INTERNAL_H
#define GS_DOCTOR_INTERNAL_H

#include <stdbool.h>

#include "doctor/doctor.h"
#include "runtime/hostconfig.h"

/* The facts gathered once and read by every check. */
struct doctor {
        const struct gs_doctor_opts *o;
        struct gs_hostconfig hc;          /* defaults when the file is missing or invalid */
        bool config_found;                /* a host config file was read */
        struct gs_error config_err;       /* code != 0: it was invalid */
        struct gs_context *ctx;           /* NULL: the driver root could not be opened */
        struct gs_error ctx_err;
        const struct gs_device_info *dev; /* NVML's answer through the helper, NULL when it failed */
        struct gs_error dev_err;
};

/* Set status and message (printf-style); the fix is set separately, and only when there is one. */
void doctor_set(struct gs_doctor_result *r, enum gs_doctor_status s, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void doctor_fix(struct gs_doctor_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append to the message ("; ..." style is up to the caller). */
void doctor_append(struct gs_doctor_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One problem among several: the first replaces the message, later ones follow it after "; "; the
 * status becomes the worse of the two (ok < warn < fail). */
void doctor_problem(struct gs_doctor_result *r, enum gs_doctor_status s, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* The host path of an in-root path under the driver root. */
void doctor_host_path(const struct doctor *d, const char *in_root, char *out, size_t len);

/* check_slice.c */
void doctor_check_config(struct doctor *d, struct gs_doctor_result *r);
void doctor_check_interposer(struct doctor *d, struct gs_doctor_result *r);
void doctor_check_regions(struct doctor *d, struct gs_doctor_result *r);
void doctor_check_mps(struct doctor *d, struct gs_doctor_result *r);
/* check_driver.c */
void doctor_check_driver(struct doctor *d, struct gs_doctor_result *r);
void doctor_check_devnodes(struct doctor *d, struct gs_doctor_result *r);
/* check_cgroup.c */
void doctor_check_cgroup(struct doctor *d, struct gs_doctor_result *r);
/* check_runtime.c */
void doctor_check_oci_hook(struct doctor *d, struct gs_doctor_result *r);
void doctor_check_docker_hook(struct doctor *d, struct gs_doctor_result *r);
/* check_engines.c */
void doctor_check_engines(struct doctor *d, struct gs_doctor_result *r);
/* check_requests.c */
void doctor_check_requests(struct doctor *d, struct gs_doctor_result *r);
/* check_cdi.c */
void doctor_check_cdi(struct doctor *d, struct gs_doctor_result *r);

#endif
