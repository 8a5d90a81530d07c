/* Debug log (--debug FILE): glog-like lines "I1121 06:40:12.686717 <tid> file.c:123] msg". */
#ifndef GS_COMMON_LOG_H
#define GS_COMMON_LOG_H

/* Open (append) the log file; NULL or failure leaves logging off. Returns -1 on open failure. */
int gs_log_open(const char *path);
void gs_log_close(void);
/* Non-zero when a log file is open (lets callers skip work that only feeds the log). */
int gs_log_enabled(void);
void gs_log_write(char level, const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

#define gs_log_info(...) gs_log_write('I', __FILE__, __LINE__, __VA_ARGS__)
#define gs_log_warn(...) gs_log_write('W', __FILE__, __LINE__, __VA_ARGS__)
#define gs_log_err(...) gs_log_write('E', __FILE__, __LINE__, __VA_ARGS__)

/* A warning for the debug log that is also handed, as one line, to `sink` (a caller's log
 * callback, as the observer's collector and server take; NULL: the debug log only). */
void gs_log_warn_to(void (*sink)(void *arg, const char *line), void *arg, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#endif
