/*
 * dra-probe: the kubelet's calls to a DRA plugin, in C, for hosts without Python's grpcio (the GPU
 * host) and for the benchmark (no interpreter in the timing): through the plugin's own HTTP/2 +
 * gRPC layer (src/kubelet/h2c.c), so the CI test, which also drives the plugin with grpcio, checks it.
 *
 *   dra-probe SOCKET prepare|unprepare NS/NAME/UID      one call on the kubelet's v1 path: the answer as
 *                                                      JSON {"UID": {"cdi": [...], "error": "..."}}
 *   dra-probe SOCKET time N NS/NAME/UID                 N x (prepare, unprepare), one connection
 *                                                      each call: the prepare times, the median (ms)
 * Exit 0, or 1 with a message (an RPC that failed, a claim's error).
 */
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/proc.h"
#include "dra.pb-c.h"
#include "kubelet/h2c.h"

struct result {
        int status; /* -1: none yet */
        char message[512];
        uint8_t *msg;
        size_t len;
};

static void done(struct gs_h2c_conn *c, int status, const char *message, const uint8_t *msg, size_t len, void *ud)
{
        (void)c;
        struct result *r = ud;
        r->status = status;
        snprintf(r->message, sizeof(r->message), "%s", message ? message : "");
        if (msg != NULL && (r->msg = malloc(len ? len : 1)) != NULL) {
                memcpy(r->msg, msg, len);
                r->len = len;
        }
}

/* One unary call on a new connection; 0 with r filled (r->status GS_GRPC_*), -1: no connection. */
static int call(const char *sock, const char *path, const ProtobufCMessage *m, struct result *r)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        struct gs_error e = {0};
        struct gs_h2c_conn *c = gs_h2c_client_new(fd, &e);
        if (c == NULL) {
                close(fd);
                return -1;
        }
        size_t len = protobuf_c_message_get_packed_size(m);
        uint8_t *buf = malloc(len ? len : 1);
        protobuf_c_message_pack(m, buf);
        *r = (struct result){.status = -1};
        long long deadline = gs_now_ms() + 60000;
        if (gs_h2c_call(c, path, buf, len, deadline, done, r, &e) < 0)
                snprintf(r->message, sizeof(r->message), "%s", e.msg);
        free(buf);
        while (r->status < 0) {
                struct pollfd p = {.fd = gs_h2c_fd(c), .events = gs_h2c_events(c)};
                poll(&p, 1, 100);
                if (gs_h2c_io(c, p.revents, gs_now_ms()) < 0)
                        break;
        }
        gs_h2c_free(c); /* calls `done` (UNAVAILABLE) if it had not been */
        return 0;
}

static int one(const char *sock, bool prep, char *ref, json_object *out)
{
        char *ns = strtok(ref, "/"), *name = strtok(NULL, "/"), *uid = strtok(NULL, "/");
        if (ns == NULL || name == NULL || uid == NULL) {
                fprintf(stderr, "dra-probe: a claim is NS/NAME/UID\n");
                return 1;
        }
        V1__Claim cl = V1__CLAIM__INIT, *cls[] = {&cl};
        cl.namespace_ = ns;
        cl.name = name;
        cl.uid = uid;
        struct result r;
        int rc;
        if (prep) {
                V1__NodePrepareResourcesRequest rq = V1__NODE_PREPARE_RESOURCES_REQUEST__INIT;
                rq.n_claims = 1;
                rq.claims = cls;
                rc = call(sock, "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources", &rq.base, &r);
        } else {
                V1__NodeUnprepareResourcesRequest rq = V1__NODE_UNPREPARE_RESOURCES_REQUEST__INIT;
                rq.n_claims = 1;
                rq.claims = cls;
                rc = call(sock, "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources", &rq.base, &r);
        }
        if (rc < 0 || r.status != GS_GRPC_OK) {
                fprintf(stderr, "dra-probe: %s: %s (status %d)\n", sock, rc < 0 ? "cannot connect" : r.message, r.status);
                free(r.msg);
                return 1;
        }
        int bad = 0;
        if (prep) {
                V1__NodePrepareResourcesResponse *a = v1__node_prepare_resources_response__unpack(NULL, r.len, r.msg);
                for (size_t i = 0; a != NULL && i < a->n_claims; i++) {
                        json_object *o = json_object_new_object(), *cdi = json_object_new_array();
                        V1__NodePrepareResourceResponse *v = a->claims[i]->value;
                        for (size_t d = 0; v != NULL && d < v->n_devices; d++)
                                for (size_t k = 0; k < v->devices[d]->n_cdi_device_ids; k++)
                                        json_object_array_add(cdi, json_object_new_string(v->devices[d]->cdi_device_ids[k]));
                        json_object_object_add(o, "cdi", cdi);
                        json_object_object_add(o, "error", json_object_new_string(v && v->error ? v->error : ""));
                        bad |= v != NULL && v->error != NULL && v->error[0] != '\0';
                        json_object_object_add(out, a->claims[i]->key, o);
                }
                bad |= a == NULL;
                if (a != NULL)
                        v1__node_prepare_resources_response__free_unpacked(a, NULL);
        } else {
                V1__NodeUnprepareResourcesResponse *a = v1__node_unprepare_resources_response__unpack(NULL, r.len, r.msg);
                for (size_t i = 0; a != NULL && i < a->n_claims; i++) {
                        const char *e = a->claims[i]->value && a->claims[i]->value->error ? a->claims[i]->value->error : "";
                        json_object *o = json_object_new_object();
                        json_object_object_add(o, "error", json_object_new_string(e));
                        bad |= e[0] != '\0';
                        json_object_object_add(out, a->claims[i]->key, o);
                }
                bad |= a == NULL;
                if (a != NULL)
                        v1__node_unprepare_resources_response__free_unpacked(a, NULL);
        }
        free(r.msg);
        return bad;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        if (argc == 4 && (strcmp(argv[2], "prepare") == 0 || strcmp(argv[2], "unprepare") == 0)) {
                json_object *out = json_object_new_object();
                int rc = one(argv[1], strcmp(argv[2], "prepare") == 0, argv[3], out);
                printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
                json_object_put(out);
                return rc;
        }
        if (argc == 5 && strcmp(argv[2], "time") == 0) {
                int n = atoi(argv[3]);
                double *ms = calloc(n > 0 ? (size_t)n : 1, sizeof(double));
                for (int i = 0; i < n; i++) {
                        char ref[512];
                        snprintf(ref, sizeof(ref), "%s", argv[4]);
                        json_object *out = json_object_new_object();
                        struct timespec t0, t1;
                        clock_gettime(CLOCK_MONOTONIC, &t0);
                        int rc = one(argv[1], true, ref, out);
                        clock_gettime(CLOCK_MONOTONIC, &t1);
                        json_object_put(out);
                        snprintf(ref, sizeof(ref), "%s", argv[4]);
                        json_object *out2 = json_object_new_object();
                        rc |= one(argv[1], false, ref, out2);
                        json_object_put(out2);
                        if (rc != 0)
                                return 1;
                        ms[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
                        printf("prepare %d: %.2f ms\n", i + 1, ms[i]);
                }
                qsort(ms, (size_t)n, sizeof(double), cmp);
                printf("median %.2f ms over %d\n", n > 0 ? (n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2) : 0.0, n);
                free(ms);
                return 0;
        }
        fprintf(stderr, "usage: dra-probe SOCKET prepare|unprepare NS/NAME/UID | dra-probe SOCKET time N NS/NAME/UID\n");
        return 2;
}
