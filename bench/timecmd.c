/*
 * timecmd: run several commands interleaved, N rounds each, and print each one's median, min and
 * max wall time in ms, its median as a ratio to the first command (the baseline), and the median
 * of its paired differences to the baseline (same round) with a distribution-free 95% confidence
 * interval: the pairing cancels the slow drift that separate medians keep.
 *   timecmd [-n ROUNDS] [-w WARMUP] -- CMD1 ARGS... -- CMD2 ARGS... [-- ...]
 * stdout of the commands goes to /dev/null; a command that fails makes timecmd fail.
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CMDS 8

static double run_once(char **argv, int *ok)
{
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        pid_t pid = fork();
        if (pid == 0) {
                int fd = open("/dev/null", O_WRONLY);
                if (fd >= 0)
                        dup2(fd, STDOUT_FILENO);
                execvp(argv[0], argv);
                _exit(127);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        clock_gettime(CLOCK_MONOTONIC, &b);
        *ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

static int cmp_double(const void *x, const void *y)
{
        double a = *(const double *)x, b = *(const double *)y;
        return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
        int rounds = 20, warmup = 2, i = 1;
        for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
                if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
                        rounds = atoi(argv[++i]);
                else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
                        warmup = atoi(argv[++i]);
        }
        char **cmds[MAX_CMDS];
        int ncmds = 0;
        while (i < argc && ncmds < MAX_CMDS) {
                argv[i] = NULL; /* terminates the previous command */
                cmds[ncmds++] = &argv[++i];
                while (i < argc && strcmp(argv[i], "--") != 0)
                        i++;
        }
        if (ncmds == 0 || rounds < 1) {
                fprintf(stderr, "usage: timecmd [-n ROUNDS] [-w WARMUP] -- CMD... [-- CMD...]\n");
                return 2;
        }
        double *t = calloc((size_t)(ncmds * rounds), sizeof(double));
        if (t == NULL)
                return 1;
        for (int r = -warmup; r < rounds; r++)
                for (int c = 0; c < ncmds; c++) {
                        int ok;
                        double ms = run_once(cmds[c], &ok);
                        if (!ok) {
                                fprintf(stderr, "timecmd: command %d (%s) failed\n", c + 1, cmds[c][0]);
                                return 1;
                        }
                        if (r >= 0)
                                t[c * rounds + r] = ms;
                }
        /* paired differences to the baseline, before the per-command sort */
        double *d = calloc((size_t)(ncmds * rounds), sizeof(double));
        if (d == NULL)
                return 1;
        for (int c = 1; c < ncmds; c++) {
                for (int r = 0; r < rounds; r++)
                        d[c * rounds + r] = t[c * rounds + r] - t[r];
                qsort(&d[c * rounds], (size_t)rounds, sizeof(double), cmp_double);
        }
        /* ranks of a 95% interval for the median (normal approximation of the binomial) */
        int lo = (int)((rounds - 1.96 * sqrt((double)rounds)) / 2.0);
        int hi = rounds - 1 - lo;
        if (lo < 0)
                lo = 0;
        if (hi >= rounds)
                hi = rounds - 1;
        double base = 0;
        printf("%-48s %9s %9s %9s %7s %s\n", "command", "median_ms", "min_ms", "max_ms", "ratio",
               "paired_diff_ms [95% CI]");
        for (int c = 0; c < ncmds; c++) {
                double *v = &t[c * rounds];
                qsort(v, (size_t)rounds, sizeof(double), cmp_double);
                double med = rounds % 2 ? v[rounds / 2] : (v[rounds / 2 - 1] + v[rounds / 2]) / 2;
                if (c == 0)
                        base = med;
                char name[49] = "";
                for (char **a = cmds[c]; *a != NULL; a++) {
                        const char *s = a == cmds[c] && strrchr(*a, '/') ? strrchr(*a, '/') + 1 : *a;
                        if (strlen(name) + strlen(s) + 2 < sizeof(name)) {
                                if (a != cmds[c])
                                        strcat(name, " ");
                                strcat(name, s);
                        }
                }
                printf("%-48s %9.2f %9.2f %9.2f %7.3f", name, med, v[0], v[rounds - 1], med / base);
                if (c > 0) {
                        double *e = &d[c * rounds];
                        double dm = rounds % 2 ? e[rounds / 2] : (e[rounds / 2 - 1] + e[rounds / 2]) / 2;
                        printf(" %+.2f [%+.2f, %+.2f]", dm, e[lo], e[hi]);
                }
                printf("\n");
        }
        free(d);
        free(t);
        return 0;
}
