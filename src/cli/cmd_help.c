/* gpuslice help [COMMAND]: the command's man page (man gpuslice-COMMAND) when man is installed and has
 * the page, else the command's --help. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

extern char **environ;

/* Does `man -w PAGE` find PAGE? False when man is not installed. */
static bool man_has_page(const char *page)
{
        posix_spawn_file_actions_t fa;
        if (posix_spawn_file_actions_init(&fa) != 0)
                return false;
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        char *argv[] = {"man", "-w", (char *)page, NULL};
        pid_t pid;
        int rc = posix_spawnp(&pid, "man", &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0)
                return false;
        int status;
        pid_t w;
        while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
                ;
        return w == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int cmd_help(const struct cli_globals *g, const char *verb, int (*run)(const struct cli_globals *, int, char **))
{
        char page[64];
        snprintf(page, sizeof(page), "gpuslice-%s", verb);
        if (man_has_page(page)) {
                fflush(stdout);
                execlp("man", "man", page, (char *)NULL);
                /* man vanished in between: its --help below */
        }
        char *argv[] = {(char *)verb, "--help", NULL};
        optind = 0;
        return run(g, 2, argv);
}
