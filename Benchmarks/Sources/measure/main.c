// measure PROGRAM [ARGUMENTS...]: runs a program as a child of this small process and prints
// its wall-clock seconds and its peak resident memory in KiB ("0.0123 45678"), its output sent
// to /dev/null. The peak is the child's own: Linux carries ru_maxrss over an exec from the
// process that forked, and this one is smaller than any program it measures.
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: measure PROGRAM [ARGUMENTS...]\n"); return 2; }
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t child = fork();
    if (child < 0) { perror("fork"); return 1; }
    if (child == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 1);
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    if (wait4(child, &status, 0, &usage) < 0) { perror("wait4"); return 1; }
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) { fprintf(stderr, "%s failed (status %d)\n", argv[1], status); return 1; }
    printf("%.6f %ld\n", (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9, usage.ru_maxrss);
    return 0;
}
