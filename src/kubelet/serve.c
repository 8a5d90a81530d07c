/* The plugins' shared serving pieces (see serve.h). */
#include "kubelet/serve.h"

#include <signal.h>
#include <stdio.h>
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
