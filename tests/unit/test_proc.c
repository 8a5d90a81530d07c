/* src/common/proc.c: writing a child's input to a pipe whose reader is gone (a child that exited
 * before reading: an MPS control binary that found no daemon) fails with EPIPE and leaves no
 * SIGPIPE behind; under the default disposition, a plain write() there ends the process without a
 * word, as it ended `gpuslice mps supervise` in CI. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/proc.h"

/* A pipe with its read end closed, as a child's stdin once the child exited. */
static int reader_gone(void)
{
        int p[2];
        assert_int_equal(pipe(p), 0);
        close(p[0]);
        return p[1];
}

static bool sigpipe_pending(void)
{
        sigset_t s;
        sigemptyset(&s);
        sigpending(&s);
        return sigismember(&s, SIGPIPE) == 1;
}

/* In a child of its own, under SIGPIPE's default disposition (which ends the process): the write
 * fails with EPIPE, the process lives on, nothing pending, the signal mask as it was. */
static void test_reader_gone_no_signal(void **state)
{
        (void)state;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                signal(SIGPIPE, SIG_DFL);
                int fd = reader_gone();
                sigset_t before, after;
                sigprocmask(SIG_SETMASK, NULL, &before);
                errno = 0;
                ssize_t n = gs_write_child_input(fd, "get_server_list\n", 16);
                int e = errno;
                sigprocmask(SIG_SETMASK, NULL, &after);
                _exit(n == -1 && e == EPIPE && !sigpipe_pending() && !sigismember(&after, SIGPIPE) &&
                              sigismember(&before, SIGPIPE) == sigismember(&after, SIGPIPE)
                          ? 0
                          : 1);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status))
                fail_msg("the write ended the process with signal %d", WTERMSIG(status));
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* A SIGPIPE that was pending before (blocked by the caller) stays pending: it is not ours. */
static void test_pending_before_kept(void **state)
{
        (void)state;
        sigset_t pipe_only, old;
        sigemptyset(&pipe_only);
        sigaddset(&pipe_only, SIGPIPE);
        sigprocmask(SIG_BLOCK, &pipe_only, &old);
        raise(SIGPIPE);
        int fd = reader_gone();
        assert_int_equal(gs_write_child_input(fd, "x\n", 2), -1);
        assert_int_equal(errno, EPIPE);
        assert_true(sigpipe_pending());
        static const struct timespec now = {0, 0};
        assert_int_equal(sigtimedwait(&pipe_only, NULL, &now), SIGPIPE);
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(fd);
}

/* A reader there: the bytes go through. */
static void test_reader_there(void **state)
{
        (void)state;
        int p[2];
        assert_int_equal(pipe(p), 0);
        assert_int_equal(gs_write_child_input(p[1], "quit\n", 5), 5);
        char buf[8] = {0};
        assert_int_equal(read(p[0], buf, sizeof(buf)), 5);
        assert_string_equal(buf, "quit\n");
        close(p[0]);
        close(p[1]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reader_gone_no_signal),
                cmocka_unit_test(test_pending_before_kept),
                cmocka_unit_test(test_reader_there),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
