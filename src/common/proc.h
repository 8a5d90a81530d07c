/* Child processes: a monotonic clock for deadlines, waiting for a child with a deadline, and the
 * descriptors an exec'd program may inherit. */
#ifndef GS_COMMON_PROC_H
#define GS_COMMON_PROC_H

#include <sys/types.h>

/* CLOCK_MONOTONIC in milliseconds (deadlines). */
long long gs_now_ms(void);

/* Wait for our child `pid` until `deadline` (gs_now_ms() time): 1 reaped (*status set), 0 timed out
 * (still running, not reaped), -1 error (errno). Sleeps on a pidfd where the kernel has them. */
int gs_wait_until(pid_t pid, long long deadline, int *status);

/* Write `len` bytes of a child's input to the pipe `fd` (its read end the child's stdin), with
 * SIGPIPE blocked for the calling thread: a child that exited before reading (a control binary
 * that found no daemon) makes it -1 with errno EPIPE, never a signal that ends us without a word
 * (it ended `gpuslice mps supervise` so under load in CI). A SIGPIPE the write raised is taken
 * off the thread's pending set; one that was pending before is left there. Retries on EINTR;
 * returns the bytes written (a short count on a pipe that filled) or -1. */
ssize_t gs_write_child_input(int fd, const void *buf, size_t len);

/* Mark every descriptor above 2 close-on-exec (close_range where the kernel has it), so that only
 * stdio reaches a program about to be exec'd. For a freshly forked child. */
void gs_cloexec_from_3(void);

#endif
