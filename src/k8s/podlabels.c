/*
 * Pod, namespace and container labels for the slices the plugin handed out, from the kubelet's
 * pod-resources API, for `gpuslice metrics` (which reads <regions-dir>/<id>/labels).
 *
 * The hook already writes labels from the CRI annotations when the runtime passes them; this
 * fills in the slices that still have none: every label-interval, when such a slice exists, the
 * plugin calls List on the pod-resources socket, reads GPUSLICE_K8S_DEVICES_<RESOURCE> (the device
 * IDs its Allocate answer put there) from the slice's container's first process
 * (/proc/<owner>/environ, its start time checked against the owner record), and labels the slice
 * with the one container the kubelet lists with exactly those IDs. A slice whose IDs match no
 * container, or more than one, is left alone. A labels file is never replaced.
 *
 * Trust: a process can rewrite its own environ memory, so a container could point its labels at
 * another pod's devices; labels are for display and never grant anything.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/privilege.h"
#include "common/proc.h"
#include "k8s/plugin_int.h"
#include "podresources.pb-c.h"
#include "slice/slice.h"

#define ENVIRON_MAX (256u << 10)

/* The owner process's start time (/proc/<pid>/stat field 22), 0 if unknown. */
static unsigned long long start_time(pid_t pid)
{
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        unsigned long long st = 0;
        /* after the comm: state is field 3, starttime field 22 */
        if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                                &st) != 1)
                return 0;
        return st;
}

/* The owner's environment (NUL-separated, NUL-terminated), malloc'd; NULL if unreadable. */
static char *owner_environ(pid_t pid, size_t *len)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        char *buf = malloc(ENVIRON_MAX + 1);
        size_t n = 0;
        while (buf != NULL && n < ENVIRON_MAX) {
                ssize_t r = read(fd, buf + n, ENVIRON_MAX - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                n += (size_t)r;
        }
        if (buf != NULL)
                buf[n] = '\0';
        *len = n;
        return buf;
}

/* Does container `c` hold exactly the IDs of the comma list `ids` for `resource`? */
static bool holds(const V1__ContainerResources *c, const char *resource, const char *ids)
{
        size_t want = 0, found = 0;
        for (const char *p = ids; *p != '\0'; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
                size_t l = strcspn(p, ",");
                if (l == 0)
                        continue;
                want++;
                for (size_t d = 0; d < c->n_devices; d++) {
                        const V1__ContainerDevices *cd = c->devices[d];
                        if (strcmp(cd->resource_name, resource) != 0)
                                continue;
                        for (size_t k = 0; k < cd->n_device_ids; k++)
                                if (strlen(cd->device_ids[k]) == l && strncmp(cd->device_ids[k], p, l) == 0)
                                        found++;
                }
        }
        size_t total = 0;
        for (size_t d = 0; d < c->n_devices; d++)
                if (strcmp(c->devices[d]->resource_name, resource) == 0)
                        total += c->devices[d]->n_device_ids;
        return want > 0 && found == want && total == want;
}

/* The one (pod, container) holding the IDs of this resource; false when none or several. */
static bool owner_of(const V1__ListPodResourcesResponse *lr, const char *resource, const char *ids,
                     const V1__PodResources **pod, const V1__ContainerResources **ctr)
{
        unsigned n = 0;
        for (size_t i = 0; i < lr->n_pod_resources; i++)
                for (size_t j = 0; j < lr->pod_resources[i]->n_containers; j++)
                        if (holds(lr->pod_resources[i]->containers[j], resource, ids)) {
                                *pod = lr->pod_resources[i];
                                *ctr = lr->pod_resources[i]->containers[j];
                                n++;
                        }
        return n == 1;
}

/* Label one slice directory from its owner's environment; true when labelled. */
static bool label_slice(struct gs_k8s_plugin *p, int regfd, const char *id, const V1__ListPodResourcesResponse *lr)
{
        pid_t pid;
        unsigned long long start;
        struct gs_slice_labels l;
        size_t len = 0;
        if (gs_slice_read_labels(regfd, id, &l) != 0 || gs_slice_read_owner(regfd, id, &pid, &start) < 0 ||
            start_time(pid) != start)
                return false;
        gs_autofree char *env = owner_environ(pid, &len);
        for (size_t off = 0; env != NULL && off < len; off += strlen(env + off) + 1) {
                const char *kv = env + off;
                for (size_t r = 0; r < p->plan.nres; r++) {
                        const struct gs_k8s_resource *res = &p->plan.res[r];
                        size_t kl = strlen(res->env_key);
                        const V1__PodResources *pod;
                        const V1__ContainerResources *ctr;
                        if (strncmp(kv, res->env_key, kl) != 0 || kv[kl] != '=' ||
                            !owner_of(lr, res->name, kv + kl + 1, &pod, &ctr))
                                continue;
                        char a[3][320];
                        snprintf(a[0], sizeof(a[0]), "io.kubernetes.pod.namespace=%s", pod->namespace_);
                        snprintf(a[1], sizeof(a[1]), "io.kubernetes.pod.name=%s", pod->name);
                        snprintf(a[2], sizeof(a[2]), "io.kubernetes.container.name=%s", ctr->name);
                        char *ann[3] = {a[0], a[1], a[2]};
                        struct gs_error err = {0};
                        if (gs_slice_write_labels(p->o->hc->regions_dir, id, ann, 3, NULL, 0, &err) < 0) {
                                gs_log_warn("labels for %s: %s", id, err.msg);
                                return false;
                        }
                        gs_k8s_note(p, "slice %s: labelled %s/%s container %s (pod-resources)", id, pod->namespace_,
                                    pod->name, ctr->name);
                        return true;
                }
        }
        return false;
}

static void listed(struct gs_h2c_conn *c, int status, const char *message, const uint8_t *msg, size_t len, void *ud)
{
        (void)c;
        struct gs_k8s_plugin *p = ud;
        p->podres_busy = false;
        if (status != GS_GRPC_OK) {
                gs_log_warn("pod-resources List: %s (status %d)", message, status);
                return;
        }
        V1__ListPodResourcesResponse *lr = v1__list_pod_resources_response__unpack(NULL, len, msg);
        if (lr == NULL) {
                gs_log_warn("pod-resources List: a malformed answer");
                return;
        }
        gs_autoclose int regfd = open(p->o->hc->regions_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = regfd >= 0 ? fdopendir(dup(regfd)) : NULL;
        struct dirent *e;
        gs_caps_enter(GS_STAGE_CONTAINER, NULL); /* other users' /proc/<pid>/environ */
        while (d != NULL && (e = readdir(d)) != NULL)
                if (gs_slice_id_valid(e->d_name))
                        label_slice(p, regfd, e->d_name, lr);
        gs_caps_enter(GS_STAGE_INIT, NULL);
        if (d != NULL)
                closedir(d);
        v1__list_pod_resources_response__free_unpacked(lr, NULL);
}

/* Is there a slice directory without labels? */
static bool unlabelled(const char *regions_dir)
{
        gs_autoclose int regfd = open(regions_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = regfd >= 0 ? fdopendir(dup(regfd)) : NULL;
        struct dirent *e;
        bool any = false;
        while (!any && d != NULL && (e = readdir(d)) != NULL) {
                struct gs_slice_labels l;
                any = gs_slice_id_valid(e->d_name) && gs_slice_read_labels(regfd, e->d_name, &l) == 0;
        }
        if (d != NULL)
                closedir(d);
        return any;
}

void gs_k8s_labels_tick(struct gs_k8s_plugin *p, long long now)
{
        const struct gs_hostconfig_dp *cfg = p->cfg;
        if (cfg->label_interval_s == 0 || cfg->pod_resources_socket[0] == '\0' || p->podres_busy || now < p->labels_at)
                return;
        p->labels_at = now + (long long)cfg->label_interval_s * 1000;
        if (!unlabelled(p->o->hc->regions_dir) || access(cfg->pod_resources_socket, F_OK) < 0)
                return;
        struct gs_error err = {0};
        V1__ListPodResourcesRequest rq = V1__LIST_POD_RESOURCES_REQUEST__INIT;
        uint8_t buf[16];
        size_t len = v1__list_pod_resources_request__pack(&rq, buf);
        int fd = gs_k8s_dial(cfg->pod_resources_socket, &err);
        struct gs_h2c_conn *h = fd >= 0 ? gs_h2c_client_new(fd, &err) : NULL;
        if (h == NULL && fd >= 0)
                close(fd);
        if (h != NULL && gs_h2c_call(h, "/v1.PodResourcesLister/List", buf, len, now + GS_K8S_CALL_TIMEOUT_MS, listed, p,
                                     &err) == 0 &&
            gs_k8s_conn_add(p, h, GS_K8S_CONN_PODRES, NULL) != NULL) {
                p->podres_busy = true;
                return;
        }
        gs_h2c_free(h);
        gs_log_warn("pod-resources: %s", err.msg[0] ? err.msg : "too many connections");
}
