/* The plugins' shared serving pieces (see serve.h). */
#include "kubelet/serve.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/log.h"

int gs_k8s_signals_open(struct gs_error *err)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        signal(SIGPIPE, SIG_IGN);
        if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
                return gs_error_sys(err, "sigprocmask");
        int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
        return fd < 0 ? gs_error_sys(err, "signalfd") : fd;
}

unsigned gs_k8s_signals_read(int fd)
{
        struct signalfd_siginfo si;
        unsigned stop = 0;
        while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
                        stop = si.ssi_signo;
        return stop;
}

bool gs_k8s_signals_stop(int fd, gs_k8s_note_fn note, void *ud)
{
        unsigned sig = gs_k8s_signals_read(fd);
        if (sig != 0)
                note(ud, "signal %u: stopping", sig);
        return sig != 0;
}

/* The handle of entry i (its first member). */
static struct gs_h2c_conn *handle_at(void *conns, size_t size, unsigned i)
{
        struct gs_h2c_conn *h;
        memcpy(&h, (char *)conns + (size_t)i * size, sizeof(h));
        return h;
}

void gs_k8s_conns_serve(void *conns, size_t size, unsigned *n, const struct pollfd *fds, unsigned npoll, long long now,
                        bool (*expired)(const void *conn, long long now))
{
        struct gs_h2c_conn *done[GS_K8S_CONNS_MAX];
        unsigned ndone = 0;
        for (unsigned i = 0; i < *n && ndone < GS_K8S_CONNS_MAX; i++) {
                struct gs_h2c_conn *h = handle_at(conns, size, i);
                if (gs_h2c_io(h, i < npoll ? fds[i].revents : 0, now) < 0 || expired((char *)conns + (size_t)i * size, now))
                        done[ndone++] = h;
        }
        for (unsigned k = 0; k < ndone; k++) {
                for (unsigned i = 0; i < *n; i++) {
                        if (handle_at(conns, size, i) != done[k])
                                continue;
                        if (i + 1 < *n)
                                memcpy((char *)conns + (size_t)i * size, (char *)conns + (size_t)(*n - 1) * size, size);
                        --*n;
                        break;
                }
                gs_h2c_free(done[k]); /* its callbacks may add connections: the table is consistent */
        }
}

bool gs_k8s_conn_expired(const struct gs_h2c_conn *h, long long opened, long long now)
{
        if (gs_h2c_nstreams(h) > 0)
                return false;
        long long idle = gs_h2c_idle_ms(h, now);
        bool never_heard = idle >= now - opened;
        return idle > (never_heard ? GS_K8S_HANDSHAKE_MS : GS_K8S_IDLE_MS);
}

void gs_k8s_vnote(void (*note)(void *ud, const char *line), void *ud, const char *fmt, va_list ap)
{
        char line[1024];
        vsnprintf(line, sizeof(line), fmt, ap);
        gs_log_info("%s", line);
        if (note != NULL)
                note(ud, line);
}
