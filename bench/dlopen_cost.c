/* dlopen_cost — what loading a SPANK plugin costs the process that loads it.
 *
 * Usage: dlopen_cost LIBSLURMFULL RUNS PLUGIN[,LIB...] ...
 *
 * srun, sbatch and slurmstepd dlopen() every plugstack plugin once per
 * process (RTLD_LAZY, src/common/plugin.c), after libslurmfull.so, which
 * provides the spank_* and slurm_* symbols plugins use. This program loads
 * libslurmfull.so once (RTLD_GLOBAL, as those binaries have it), then for
 * each run forks one child per argument, so that every load starts from a
 * process that has never seen the plugin, and times dlopen() and dlclose()
 * in the child. A comma-separated argument loads several files in order
 * (a library and what depends on it). Arguments alternate in order from run
 * to run. Prints the median and p90 of dlopen() and the median of dlclose().
 * Reference: an empty C plugin (a one-line slurm_spank_init). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMaxFiles = 16 };

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int by_value(const void* a, const void* b) {
    long long x = *(const long long*)a, y = *(const long long*)b;
    return (x > y) - (x < y);
}

/* In a child: load the files of `list`, unload them, report both times. */
static void load_in_child(const char* list, int out) {
    void* handles[kMaxFiles];
    int loaded = 0;
    char* names = strdup(list);
    long long start = now_ns();
    for (char* name = strtok(names, ","); name != NULL && loaded < kMaxFiles; name = strtok(NULL, ",")) {
        handles[loaded] = dlopen(name, RTLD_LAZY);
        if (handles[loaded] == NULL) {
            fprintf(stderr, "dlopen_cost: %s\n", dlerror());
            _exit(1);
        }
        ++loaded;
    }
    long long opened = now_ns();
    while (loaded > 0) dlclose(handles[--loaded]);
    long long times[2] = {opened - start, now_ns() - opened};
    _exit(write(out, times, sizeof(times)) == (ssize_t)sizeof(times) ? 0 : 1);
}

int main(int argc, char** argv) {
    if (argc < 4 || atoi(argv[2]) < 1) {
        fprintf(stderr, "usage: %s LIBSLURMFULL RUNS PLUGIN[,LIB...] ...\n", argv[0]);
        return 2;
    }
    if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == NULL) {
        fprintf(stderr, "dlopen_cost: %s\n", dlerror());
        return 2;
    }
    const int runs = atoi(argv[2]);
    const int files = argc - 3;
    long long* open_ns = calloc((size_t)files * (size_t)runs, sizeof(long long));
    long long* close_ns = calloc((size_t)files * (size_t)runs, sizeof(long long));
    if (open_ns == NULL || close_ns == NULL) return 2;
    for (int run = 0; run < runs; ++run) {
        for (int k = 0; k < files; ++k) {
            const int i = (run % 2) ? files - 1 - k : k;
            int pipe_fd[2];
            if (pipe(pipe_fd) != 0) return 2;
            pid_t child = fork();
            if (child < 0) return 2;
            if (child == 0) load_in_child(argv[3 + i], pipe_fd[1]);
            close(pipe_fd[1]);
            long long times[2];
            ssize_t got = read(pipe_fd[0], times, sizeof(times));
            close(pipe_fd[0]);
            waitpid(child, NULL, 0);
            if (got != (ssize_t)sizeof(times)) {
                fprintf(stderr, "dlopen_cost: loading %s failed\n", argv[3 + i]);
                return 1;
            }
            open_ns[i * runs + run] = times[0];
            close_ns[i * runs + run] = times[1];
        }
    }
    printf("%-64s %10s %10s %10s\n", "file(s)", "open p50", "open p90", "close p50");
    for (int i = 0; i < files; ++i) {
        long long* o = open_ns + i * runs;
        long long* c = close_ns + i * runs;
        qsort(o, (size_t)runs, sizeof(long long), by_value);
        qsort(c, (size_t)runs, sizeof(long long), by_value);
        printf("%-64s %8.0fus %8.0fus %8.0fus\n", argv[3 + i], o[runs / 2] / 1e3, o[(runs * 9) / 10] / 1e3,
               c[runs / 2] / 1e3);
    }
    free(open_ns);
    free(close_ns);
    return 0;
}
