/*
 * kubelet-probe: the kubelet's part of one allocation, in C, for hosts without Python's grpcio
 * (the GPU host): serve Registration on DIR/kubelet.sock until RESOURCE registers, then dial its
 * endpoint, check GetDevicePluginOptions, Allocate IDS, and print the answer as one JSON object:
 *   {"endpoint": ..., "cdi_devices": [...], "envs": {...}, "devices": [{"container_path", "host_path",
 *    "permissions"}], "annotations": {...}}
 * It speaks through the plugin's own HTTP/2 + gRPC layer (src/kubelet/h2c.c), so the CI tests, which
 * also drive the plugin with grpcio, check it before it is used there.
 * GetDevicePluginOptions and Allocate go out together on one connection: gRPC does not order the
 * answers of two calls (the plugin's HTTP/2 layer may finish Allocate's stream first when both
 * requests came in one read), so the probe waits for both before it closes the connection.
 * kubelet.sock is made listening under a temporary name and renamed into place, as the plugin
 * must never find it there before it accepts (its Register would be refused and retried 5 s on).
 *
 *   kubelet-probe DIR RESOURCE ID[,ID...] [TIMEOUT_SECONDS]     exit 0, or 1 with a message
 */
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "api.pb-c.h"
#include "common/proc.h"
#include "kubelet/h2c.h"

static const char *want_resource;
static char endpoint[256];
static int done_status = -1;        /* Allocate's gRPC status (-1: no answer yet) */
static char done_message[512];
static V1beta1__AllocateResponse *answer;
static int options_status = -1;     /* GetDevicePluginOptions' (-1: no answer yet) */
static char options_message[512];
static bool options_ok;

static void on_call(struct gs_h2c_conn *c, int32_t stream, const char *path, const uint8_t *msg, size_t len, void *ud)
{
        (void)ud;
        if (strcmp(path, "/v1beta1.Registration/Register") != 0) {
                gs_h2c_fail(c, stream, GS_GRPC_UNIMPLEMENTED, "unknown method");
                return;
        }
        V1beta1__RegisterRequest *rq = v1beta1__register_request__unpack(NULL, len, msg);
        if (rq == NULL || strcmp(rq->version, "v1beta1") != 0) {
                gs_h2c_fail(c, stream, GS_GRPC_INVALID_ARGUMENT, "bad RegisterRequest");
        } else {
                if (strcmp(rq->resource_name, want_resource) == 0)
                        snprintf(endpoint, sizeof(endpoint), "%s", rq->endpoint);
                V1beta1__Empty e = V1BETA1__EMPTY__INIT;
                uint8_t buf[8];
                gs_h2c_reply(c, stream, buf, v1beta1__empty__pack(&e, buf));
        }
        if (rq != NULL)
                v1beta1__register_request__free_unpacked(rq, NULL);
}

static void on_closed(struct gs_h2c_conn *c, int32_t stream, void *ud)
{
        (void)c;
        (void)stream;
        (void)ud;
}

static const struct gs_h2c_server_ops registration = {on_call, on_closed};

static void options_done(struct gs_h2c_conn *c, int status, const char *message, const uint8_t *msg, size_t len, void *ud)
{
        (void)c;
        (void)ud;
        V1beta1__DevicePluginOptions *o = status == 0 ? v1beta1__device_plugin_options__unpack(NULL, len, msg) : NULL;
        options_status = status;
        options_ok = o != NULL && o->get_preferred_allocation_available;
        snprintf(options_message, sizeof(options_message), "%s", o == NULL ? message : "");
        if (o != NULL)
                v1beta1__device_plugin_options__free_unpacked(o, NULL);
}

static void allocate_done(struct gs_h2c_conn *c, int status, const char *message, const uint8_t *msg, size_t len, void *ud)
{
        (void)c;
        (void)ud;
        done_status = status;
        snprintf(done_message, sizeof(done_message), "%s", message);
        if (status == 0)
                answer = v1beta1__allocate_response__unpack(NULL, len, msg);
}

/* A socket listening on PATH (made as PATH.tmp, renamed into place once it listens), or connected to it. */
static int unix_socket(const char *path, bool listen_on)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(path) + 4 >= sizeof(a.sun_path))
                return -1;
        snprintf(a.sun_path, sizeof(a.sun_path), "%s%s", path, listen_on ? ".tmp" : "");
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -1;
        if (listen_on) {
                unlink(a.sun_path);
                if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 8) == 0 &&
                    rename(a.sun_path, path) == 0)
                        return fd;
                unlink(a.sun_path);
        } else if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
                return fd;
        }
        close(fd);
        return -1;
}

static void print_answer(void)
{
        V1beta1__ContainerAllocateResponse *r = answer->n_container_responses == 1 ? answer->container_responses[0] : NULL;
        json_object *o = json_object_new_object(), *cdi = json_object_new_array(), *envs = json_object_new_object();
        json_object *devs = json_object_new_array(), *ann = json_object_new_object();
        for (size_t i = 0; r != NULL && i < r->n_cdi_devices; i++)
                json_object_array_add(cdi, json_object_new_string(r->cdi_devices[i]->name));
        for (size_t i = 0; r != NULL && i < r->n_envs; i++)
                json_object_object_add(envs, r->envs[i]->key, json_object_new_string(r->envs[i]->value));
        for (size_t i = 0; r != NULL && i < r->n_annotations; i++)
                json_object_object_add(ann, r->annotations[i]->key, json_object_new_string(r->annotations[i]->value));
        for (size_t i = 0; r != NULL && i < r->n_devices; i++) {
                json_object *d = json_object_new_object();
                json_object_object_add(d, "container_path", json_object_new_string(r->devices[i]->container_path));
                json_object_object_add(d, "host_path", json_object_new_string(r->devices[i]->host_path));
                json_object_object_add(d, "permissions", json_object_new_string(r->devices[i]->permissions));
                json_object_array_add(devs, d);
        }
        json_object_object_add(o, "endpoint", json_object_new_string(endpoint));
        json_object_object_add(o, "cdi_devices", cdi);
        json_object_object_add(o, "envs", envs);
        json_object_object_add(o, "devices", devs);
        json_object_object_add(o, "annotations", ann);
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
}

/* Drive every connection until `until` says so or the deadline passes. */
static int pump(struct gs_h2c_conn **conns, int *n, int lfd, long long deadline, bool (*until)(void))
{
        while (!until()) {
                long long now = gs_now_ms();
                if (now >= deadline)
                        return -1;
                struct pollfd p[9];
                short rev[9] = {0};
                int np = 0, had = *n;
                p[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
                for (int i = 0; i < *n; i++)
                        p[np++] = (struct pollfd){.fd = gs_h2c_fd(conns[i]), .events = gs_h2c_events(conns[i])};
                poll(p, (nfds_t)np, 100);
                for (int i = 0; i < had; i++)
                        rev[i] = p[i + 1].revents;
                if ((p[0].revents & POLLIN) && *n < 8) {
                        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                        struct gs_h2c_conn *c = fd >= 0 ? gs_h2c_server_new(fd, &registration, NULL, NULL) : NULL;
                        if (c != NULL)
                                conns[(*n)++] = c;
                        else if (fd >= 0)
                                close(fd);
                }
                for (int i = 0; i < *n;) {
                        if (gs_h2c_io(conns[i], rev[i], gs_now_ms()) < 0) {
                                gs_h2c_free(conns[i]);
                                conns[i] = conns[--*n];
                                rev[i] = rev[*n];
                        } else {
                                i++;
                        }
                }
        }
        return 0;
}

static bool registered(void) { return endpoint[0] != '\0'; }
static bool answered(void) { return done_status >= 0 && options_status >= 0; }

int main(int argc, char **argv)
{
        if (argc < 4) {
                fprintf(stderr, "usage: %s DIR RESOURCE ID[,ID...] [TIMEOUT_SECONDS]\n", argv[0]);
                return 2;
        }
        want_resource = argv[2];
        long long deadline = gs_now_ms() + 1000LL * (argc > 4 ? atoi(argv[4]) : 30);
        char path[512];
        snprintf(path, sizeof(path), "%s/kubelet.sock", argv[1]);
        int lfd = unix_socket(path, true);
        if (lfd < 0) {
                fprintf(stderr, "kubelet-probe: cannot serve %s: %s\n", path, strerror(errno));
                return 1;
        }
        struct gs_h2c_conn *conns[9];
        int n = 0;
        if (pump(conns, &n, lfd, deadline, registered) < 0) {
                fprintf(stderr, "kubelet-probe: %s did not register\n", want_resource);
                return 1;
        }
        snprintf(path, sizeof(path), "%s/%s", argv[1], endpoint);
        int fd = unix_socket(path, false);
        struct gs_h2c_conn *c = fd >= 0 ? gs_h2c_client_new(fd, NULL) : NULL;
        if (c == NULL) {
                fprintf(stderr, "kubelet-probe: cannot dial %s\n", path);
                return 1;
        }
        conns[n++] = c;
        V1beta1__Empty e = V1BETA1__EMPTY__INIT;
        uint8_t ebuf[8];
        gs_h2c_call(c, "/v1beta1.DevicePlugin/GetDevicePluginOptions", ebuf, v1beta1__empty__pack(&e, ebuf), deadline,
                    options_done, NULL, NULL);
        char *ids[64];
        size_t nids = 0;
        for (char *s = strtok(argv[3], ","); s != NULL && nids < 64; s = strtok(NULL, ","))
                ids[nids++] = s;
        V1beta1__ContainerAllocateRequest creq = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
        creq.n_devices_ids = nids;
        creq.devices_ids = ids;
        V1beta1__ContainerAllocateRequest *cr = &creq;
        V1beta1__AllocateRequest rq = V1BETA1__ALLOCATE_REQUEST__INIT;
        rq.n_container_requests = 1;
        rq.container_requests = &cr;
        uint8_t *buf = malloc(v1beta1__allocate_request__get_packed_size(&rq) + 1);
        size_t len = v1beta1__allocate_request__pack(&rq, buf);
        gs_h2c_call(c, "/v1beta1.DevicePlugin/Allocate", buf, len, deadline, allocate_done, NULL, NULL);
        free(buf);
        int rc = pump(conns, &n, lfd, deadline, answered);
        for (int i = 0; i < n; i++)
                gs_h2c_free(conns[i]);
        close(lfd);
        if (rc < 0) {
                fprintf(stderr, "kubelet-probe: timed out (Allocate status %d, GetDevicePluginOptions status %d)\n",
                        done_status, options_status);
                return 1;
        }
        if (!options_ok)
                fprintf(stderr, "kubelet-probe: GetDevicePluginOptions: %s (status %d)%s\n", options_message,
                        options_status, options_status == 0 ? ": no preferred allocation offered" : "");
        if (done_status != 0 || answer == NULL)
                fprintf(stderr, "kubelet-probe: Allocate: %s (status %d)\n", done_message, done_status);
        if (!options_ok || done_status != 0 || answer == NULL)
                return 1;
        print_answer();
        v1beta1__allocate_response__free_unpacked(answer, NULL);
        return 0;
}
