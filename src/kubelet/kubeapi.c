/* The API server client (see kubeapi.h). */
#include "kubelet/kubeapi.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strutil.h"


/* libcurl, loaded when the DRA plugin first talks to the API server (dlopen, as NVML is): only
 * `gpuslice dra-plugin` needs it, and linked into the executable its TLS stack loaded at every
 * start of gpuslice, every container's hook included (9.2 ms against 3.8 ms for --version). */
static struct {
        CURLcode (*global_init)(long flags);
        CURL *(*easy_init)(void);
        void (*easy_cleanup)(CURL *h);
        void (*easy_reset)(CURL *h);
        CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
        CURLcode (*easy_perform)(CURL *h);
        CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
        const char *(*easy_strerror)(CURLcode rc);
        struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
        void (*slist_free_all)(struct curl_slist *l);
} C;

static int load_curl(struct gs_error *err)
{
        if (C.easy_init != NULL)
                return 0;
        void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
        if (h == NULL)
                return gs_error_set(err, GS_EINIT, "the DRA plugin needs libcurl (Debian's libcurl4): %s", dlerror());
#define SYM(field, name)                                                                                   \
        if ((*(void **)&C.field = dlsym(h, name)) == NULL) {                                               \
                dlclose(h);                                                                                \
                memset(&C, 0, sizeof(C));                                                                  \
                return gs_error_set(err, GS_EINIT, "libcurl.so.4 lacks %s", name);                        \
        }
        SYM(global_init, "curl_global_init")
        SYM(easy_cleanup, "curl_easy_cleanup")
        SYM(easy_reset, "curl_easy_reset")
        SYM(easy_setopt, "curl_easy_setopt")
        SYM(easy_perform, "curl_easy_perform")
        SYM(easy_getinfo, "curl_easy_getinfo")
        SYM(easy_strerror, "curl_easy_strerror")
        SYM(slist_append, "curl_slist_append")
        SYM(slist_free_all, "curl_slist_free_all")
        SYM(easy_init, "curl_easy_init") /* last: the loaded mark */
#undef SYM
        return 0;
}

/* A whole (small) file, NUL-terminated. */
static char *slurp(const char *path, size_t max, size_t *len, struct gs_error *err)
{
        gs_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                gs_error_sys(err, "open %s", path);
                return NULL;
        }
        char *buf = malloc(max + 1);
        size_t n = 0;
        if (buf == NULL) {
                gs_error_set(err, GS_ENOMEM, "out of memory");
                return NULL;
        }
        for (;;) {
                ssize_t r = read(fd, buf + n, max + 1 - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        gs_error_sys(err, "read %s", path);
                        free(buf);
                        return NULL;
                }
                if (r == 0)
                        break;
                n += (size_t)r;
                if (n > max) {
                        gs_error_set(err, GS_EINVAL, "%s is larger than %zu bytes", path, max);
                        free(buf);
                        return NULL;
                }
        }
        buf[n] = '\0';
        if (len != NULL)
                *len = n;
        return buf;
}

static int b64val(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static char *b64decode(const char *in, size_t *outlen)
{
        size_t n = strlen(in);
        char *out = malloc(n / 4 * 3 + 4);
        unsigned acc = 0, bits = 0;
        size_t o = 0;
        if (out == NULL)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (in[i] == '=' || in[i] == '\n' || in[i] == '\r' || in[i] == ' ')
                        continue;
                int v = b64val(in[i]);
                if (v < 0) {
                        free(out);
                        return NULL;
                }
                acc = (acc << 6) | (unsigned)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = (char)((acc >> bits) & 0xff);
                }
        }
        out[o] = '\0';
        *outlen = o;
        return out;
}

static json_object *named(json_object *list, const char *name, const char *inner)
{
        for (size_t i = 0; json_object_is_type(list, json_type_array) && i < json_object_array_length(list); i++) {
                json_object *e = json_object_array_get_idx(list, i), *n = NULL, *v = NULL;
                if (json_object_object_get_ex(e, "name", &n) && json_object_is_type(n, json_type_string) &&
                    strcmp(json_object_get_string(n), name) == 0 && json_object_object_get_ex(e, inner, &v))
                        return v;
        }
        return NULL;
}

static const char *sget(json_object *o, const char *key)
{
        json_object *v = NULL;
        if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
            !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

/* A path of the kubeconfig: relative ones are relative to its directory. */
static int kc_path(const char *kubeconfig, const char *p, char *out, size_t len, struct gs_error *err)
{
        int n;
        if (p[0] == '/') {
                n = snprintf(out, len, "%s", p);
        } else {
                const char *slash = strrchr(kubeconfig, '/');
                n = slash == NULL ? snprintf(out, len, "%s", p)
                                  : snprintf(out, len, "%.*s/%s", (int)(slash - kubeconfig), kubeconfig, p);
        }
        return n < 0 || (size_t)n >= len ? gs_error_set(err, GS_EINVAL, "path too long in %s", kubeconfig) : 0;
}

static int load_kubeconfig(struct gs_kubeapi *api, const char *path, struct gs_error *err)
{
        size_t len;
        gs_autofree char *text = slurp(path, 1u << 20, &len, err);
        if (text == NULL)
                return gs_error_wrap(err, "kubeconfig");
        json_object *kc = gs_yaml_parse(text, len, err);
        int rv = -1;
        if (kc == NULL)
                return gs_error_wrap(err, "kubeconfig %s", path);
        const char *cur = sget(kc, "current-context");
        json_object *clusters = NULL, *contexts = NULL, *users = NULL;
        json_object_object_get_ex(kc, "clusters", &clusters);
        json_object_object_get_ex(kc, "contexts", &contexts);
        json_object_object_get_ex(kc, "users", &users);
        json_object *ctx = cur != NULL ? named(contexts, cur, "context") : NULL;
        const char *cname = sget(ctx, "cluster"), *uname = sget(ctx, "user");
        json_object *cl = cname != NULL ? named(clusters, cname, "cluster") : NULL;
        json_object *us = uname != NULL ? named(users, uname, "user") : NULL;
        const char *server = sget(cl, "server"), *ca = sget(cl, "certificate-authority"),
                   *cad = sget(cl, "certificate-authority-data"), *tok = sget(us, "token"), *tokf = sget(us, "tokenFile");
        if (cl == NULL || server == NULL) {
                gs_error_set(err, GS_EINVAL, "kubeconfig %s: no cluster server for the current context", path);
                goto out;
        }
        if (strncmp(server, "https://", 8) != 0) {
                gs_error_set(err, GS_EINVAL, "kubeconfig %s: the server %s is not https://", path, server);
                goto out;
        }
        if (!gs_strlcpy(api->server, server, sizeof(api->server))) {
                gs_error_set(err, GS_EINVAL, "kubeconfig %s: server too long", path);
                goto out;
        }
        if (cad != NULL) {
                api->ca_data = b64decode(cad, &api->ca_len);
                if (api->ca_data == NULL) {
                        gs_error_set(err, GS_EINVAL, "kubeconfig %s: certificate-authority-data is not base64", path);
                        goto out;
                }
        } else if (ca != NULL) {
                if (kc_path(path, ca, api->ca_file, sizeof(api->ca_file), err) < 0)
                        goto out;
        } else {
                gs_error_set(err, GS_EINVAL, "kubeconfig %s: no certificate-authority (the server is verified)", path);
                goto out;
        }
        if (tok != NULL) {
                if (!gs_strlcpy(api->token, tok, sizeof(api->token))) {
                        gs_error_set(err, GS_EINVAL, "kubeconfig %s: token too long", path);
                        goto out;
                }
        } else if (tokf != NULL) {
                if (kc_path(path, tokf, api->token_file, sizeof(api->token_file), err) < 0)
                        goto out;
        } else {
                gs_error_set(err, GS_EINVAL, "kubeconfig %s: the user has no token or tokenFile", path);
                goto out;
        }
        rv = 0;
out:
        json_object_put(kc);
        return rv;
}

int gs_kubeapi_open(struct gs_kubeapi *api, const char *kubeconfig, struct gs_error *err)
{
        memset(api, 0, sizeof(*api));
        api->attempts = 4;
        strcpy(api->res_version, "v1");
        api->timeout_ms = 5000;
        if (kubeconfig != NULL && kubeconfig[0] != '\0') {
                if (load_kubeconfig(api, kubeconfig, err) < 0)
                        return -1;
        } else {
                const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
                if (host == NULL || host[0] == '\0')
                        return gs_error_set(err, GS_EINVAL, "not in a cluster (no KUBERNETES_SERVICE_HOST): give "
                                                            "--kubeconfig");
                bool v6 = strchr(host, ':') != NULL;
                snprintf(api->server, sizeof(api->server), "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "",
                         port != NULL && port[0] ? port : "443");
                snprintf(api->ca_file, sizeof(api->ca_file), "%s/ca.crt", GS_KUBEAPI_SA_DIR);
                snprintf(api->token_file, sizeof(api->token_file), "%s/token", GS_KUBEAPI_SA_DIR);
        }
        size_t n = strlen(api->server);
        while (n > 0 && api->server[n - 1] == '/')
                api->server[--n] = '\0';
        if (load_curl(err) < 0)
                return -1;
        if (C.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return gs_error_set(err, GS_EINIT, "libcurl cannot start");
        api->curl = C.easy_init();
        if (api->curl == NULL)
                return gs_error_set(err, GS_ENOMEM, "libcurl: out of memory");
        return 0;
}

void gs_kubeapi_close(struct gs_kubeapi *api)
{
        if (api->curl != NULL)
                C.easy_cleanup(api->curl);
        api->curl = NULL;
        free(api->ca_data);
        api->ca_data = NULL;
}

struct sink {
        char *buf;
        size_t len, cap;
        bool over;
};

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
        struct sink *s = ud;
        size_t add = size * n;
        if (s->len + add > GS_KUBEAPI_MAX_BODY) {
                s->over = true;
                return 0;
        }
        if (s->len + add + 1 > s->cap) {
                size_t cap = (s->len + add + 1) * 2;
                char *b = realloc(s->buf, cap);
                if (b == NULL)
                        return 0;
                s->buf = b;
                s->cap = cap;
        }
        memcpy(s->buf + s->len, p, add);
        s->len += add;
        s->buf[s->len] = '\0';
        return add;
}

static void sleep_ms(long long ms)
{
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
}

/* One try: 0 with *status, or -1 (a transport error, err set). */
static int try_once(struct gs_kubeapi *api, const char *method, const char *url, const char *ctype, const char *json,
                    long *status, struct sink *out, struct gs_error *err)
{
        char ct[128];
        CURL *h = api->curl;
        char auth[4200];
        const char *token = api->token;
        gs_autofree char *filetok = NULL;
        if (api->token_file[0] != '\0') {
                filetok = slurp(api->token_file, 16384, NULL, err);
                if (filetok == NULL)
                        return gs_error_wrap(err, "token");
                filetok[strcspn(filetok, "\r\n")] = '\0';
                token = filetok;
        }
        if ((size_t)snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token) >= sizeof(auth))
                return gs_error_set(err, GS_EINVAL, "the token is too long");
        struct curl_slist *hdr = C.slist_append(NULL, auth);
        hdr = C.slist_append(hdr, "Accept: application/json");
        snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
        if (json != NULL)
                hdr = C.slist_append(hdr, ct);
        C.easy_reset(h);
        C.easy_setopt(h, CURLOPT_URL, url);
        C.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
        C.easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
        C.easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
        if (api->ca_data != NULL) {
                struct curl_blob blob = {api->ca_data, api->ca_len, CURL_BLOB_COPY};
                C.easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
        } else {
                C.easy_setopt(h, CURLOPT_CAINFO, api->ca_file);
        }
        C.easy_setopt(h, CURLOPT_CAPATH, NULL);
        C.easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        C.easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        if (json != NULL)
                C.easy_setopt(h, CURLOPT_POSTFIELDS, json);
        else if (strcmp(method, "GET") == 0)
                C.easy_setopt(h, CURLOPT_HTTPGET, 1L);
        C.easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)api->timeout_ms);
        C.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)api->timeout_ms);
        C.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        C.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        C.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
        C.easy_setopt(h, CURLOPT_WRITEDATA, out);
        CURLcode rc = C.easy_perform(h);
        C.slist_free_all(hdr);
        C.easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        if (rc != CURLE_OK)
                return gs_error_set(err, out->over ? GS_EINVAL : GS_ETIMEOUT, "%s %s: %s", method, url,
                                    out->over ? "the answer is too large" : C.easy_strerror(rc));
        C.easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
        return 0;
}

int gs_kubeapi_call(struct gs_kubeapi *api, const char *method, const char *path, const char *json, long *status,
                    char **body, struct gs_error *err)
{
        return gs_kubeapi_call_as(api, method, path, "application/json", json, status, body, err);
}

int gs_kubeapi_call_as(struct gs_kubeapi *api, const char *method, const char *path, const char *content_type,
                       const char *json, long *status, char **body, struct gs_error *err)
{
        char url[2048];
        if ((size_t)snprintf(url, sizeof(url), "%s%s", api->server, path) >= sizeof(url))
                return gs_error_set(err, GS_EINVAL, "URL too long: %s", path);
        long long wait = 200;
        for (unsigned k = 0;; k++) {
                struct sink s = {0};
                *status = 0;
                int rc = try_once(api, method, url, content_type, json, status, &s, err);
                bool again = rc < 0 ? err->code == GS_ETIMEOUT : (*status == 429 || *status >= 500);
                if (!again || k + 1 >= api->attempts) {
                        if (rc == 0 && body != NULL) {
                                *body = s.buf != NULL ? s.buf : strdup("");
                                s.buf = NULL;
                        }
                        free(s.buf);
                        if (rc == 0 && again)
                                gs_log_info("%s %s: HTTP %ld after %u tries", method, path, *status, k + 1);
                        return rc;
                }
                free(s.buf);
                gs_log_info("%s %s: %s; trying again in %lld ms", method, path, rc < 0 ? err->msg : "HTTP 429/5xx", wait);
                sleep_ms(wait);
                wait = wait * 4 > 5000 ? 5000 : wait * 4;
        }
}
