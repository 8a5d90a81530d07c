/* LeakSanitizer's options in a sanitizer build of the executable (nothing calls this otherwise).
 *
 * LSan checks for leaks at exit by stopping the process's threads, which it finds in
 * /proc/<getpid()>/task. An OCI createContainer hook runs in the container's pid namespace while
 * the mount namespace still shows the host's /proc (runc, crun): there getpid() is the namespace
 * pid (9, say), /proc/9 is another process or none, and LSan fails the hook with "Can't open
 * /proc/9/task" (or inspects a stranger). Where /proc/self does not name our own pid, leak
 * detection cannot work, so it is off; everywhere else (the CLI, the other hook stages, every
 * test) it stays on. Raw syscalls only: this runs inside the sanitizer's start-up. */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *__lsan_default_options(void);

/* Called before the sanitizer's shadow memory exists: not instrumented itself. */
__attribute__((no_sanitize("address", "undefined"), used)) const char *__lsan_default_options(void)
{
        char buf[32];
        long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self", buf, sizeof(buf) - 1);
        if (n <= 0)
                return "detect_leaks=0"; /* no /proc at all: LSan could not stop the world either */
        long seen = 0; /* the link's digits, by hand (no libc formatting during sanitizer start-up) */
        for (long i = 0; i < n; i++) {
                if (buf[i] < '0' || buf[i] > '9')
                        return "detect_leaks=0";
                seen = seen * 10 + (buf[i] - '0');
        }
        return seen == syscall(SYS_getpid) ? "" : "detect_leaks=0";
}
