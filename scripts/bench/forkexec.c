/* The floor of `run("true")` inside a sandbox (scripts/bench/cmdstart.py): N rounds of
 * fork + execve("/bin/true") + waitpid, each timed with CLOCK_MONOTONIC; prints one
 * line per round, in microseconds. Built static so that it runs in any image.
 *   forkexec N [spawn]   (spawn: posix_spawn instead of fork, for comparison) */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200;
    int spawn = argc > 2 && strcmp(argv[2], "spawn") == 0;
    char *args[] = {"/bin/true", NULL};
    for (int i = 0; i < n; i++) {
        double start = now_us();
        pid_t pid;
        if (spawn) {
            if (posix_spawn(&pid, args[0], NULL, NULL, args, environ) != 0) return 1;
        } else {
            pid = fork();
            if (pid < 0) return 1;
            if (pid == 0) {
                execve(args[0], args, environ);
                _exit(127);
            }
        }
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) return 2;
        printf("%.1f\n", now_us() - start);
    }
    return 0;
}
