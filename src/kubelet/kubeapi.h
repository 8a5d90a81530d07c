/*
 * A client of the Kubernetes API server for the DRA plugin (libcurl, HTTPS only, the server's
 * certificate verified against the cluster's CA; a bearer token).
 *
 *   in cluster   https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the service account's
 *                token and ca.crt (/var/run/secrets/kubernetes.io/serviceaccount/; the token is
 *                read again for every request: bound tokens are rotated)
 *   kubeconfig   the current context's cluster (server, certificate-authority[-data]) and user
 *                (token or tokenFile); client certificates and exec plugins are not supported
 *
 * A call is tried again on a transport error, 429 or 5xx, at most `attempts` times, waiting
 * 200 ms, 800 ms, 3.2 s ... between (never more than 5 s), each try bounded by `timeout_ms`.
 */
#ifndef GS_KUBELET_KUBEAPI_H
#define GS_KUBELET_KUBEAPI_H

#include <limits.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

#define GS_KUBEAPI_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define GS_KUBEAPI_MAX_BODY (8u << 20)

struct gs_kubeapi {
        char server[512];          /* https://host:port, no trailing slash */
        char ca_file[PATH_MAX];    /* "" when ca_data is set */
        char *ca_data;             /* PEM (certificate-authority-data), malloc'd */
        size_t ca_len;
        char token[4096];          /* a fixed token, or "" */
        char token_file[PATH_MAX]; /* read at every call, or "" */
        unsigned attempts;         /* default 4 */
        unsigned timeout_ms;       /* per try, default 5000 */
        void *curl;                /* the reused easy handle */
        char res_version[16];      /* resource.k8s.io's version in every DRA path and object: "v1"
                                    * (gs_kubeapi_open), "v1beta2" (dra/apiversion.h) */
};

/* kubeconfig NULL or "": in-cluster. */
int gs_kubeapi_open(struct gs_kubeapi *api, const char *kubeconfig, struct gs_error *err);
void gs_kubeapi_close(struct gs_kubeapi *api);

/* METHOD path (from the server's root, e.g. /apis/resource.k8s.io/v1/resourceslices) with a JSON
 * body or NULL. 0: an HTTP answer came (any status, in *status; its body, NUL-terminated and
 * malloc'd, in *body unless body is NULL); -1 with err: no answer after every attempt. */
int gs_kubeapi_call(struct gs_kubeapi *api, const char *method, const char *path, const char *json, long *status,
                    char **body, struct gs_error *err);
/* The same with the body's Content-Type (gs_kubeapi_call's: application/json), e.g.
 * application/apply-patch+yaml for a server-side apply (a JSON body is YAML). */
int gs_kubeapi_call_as(struct gs_kubeapi *api, const char *method, const char *path, const char *content_type,
                       const char *json, long *status, char **body, struct gs_error *err);

#endif
