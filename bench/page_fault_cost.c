/* page_fault_cost — what this machine charges for the kernel work that a
 * SPANK plugin causes in slurmstepd and in each task: a system call, a file
 * read, a page fault on new memory, a copy-on-write fault in a forked child,
 * a fork, and a request over a local socket (what a task would pay to ask a
 * node-local service).  The plugin's cost per launch follows these more than it
 * follows CPU speed: in a VM that shadows the guest's page tables a page
 * fault costs 12 to 20 µs against well under 1 µs on bare metal
 * (docs/performance.md, "Slurm plugin overhead").  Run it before reading a
 * bench/srun_overhead.sh figure from a new machine.
 *
 * Usage: page_fault_cost [PAGES]   (default 2000 pages of 4 KiB per test)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static char* anonymous_pages(long pages, long page, int flags) {
    char* p = mmap(NULL, (size_t)(pages * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED) {
        perror("page_fault_cost: mmap");
        exit(1);
    }
    return p;
}

static double touch_each_page(char* p, long pages, long page, char value) {
    const double start = now_us();
    for (long i = 0; i < pages; ++i) p[i * page] = value;
    return (now_us() - start) / (double)pages;
}

static double read_file_us(const char* path, int rounds) {
    char buffer[256];
    const double start = now_us();
    for (int i = 0; i < rounds; ++i) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return -1;
        if (read(fd, buffer, sizeof buffer) < 0) buffer[0] = 0;
        close(fd);
    }
    return (now_us() - start) / rounds;
}

/* A task asking a node-local service: connect to a Unix socket, send a
 * request the size of a job's environment, read a short answer, close.  The
 * answering process does nothing but read and reply, so this is the
 * kernel's part alone (two processes, two context switches per round). */
static double local_socket_round_trip_us(int rounds) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    snprintf(address.sun_path, sizeof address.sun_path, "/tmp/page_fault_cost.%d.sock", (int)getpid());
    const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
    if (listener < 0 || bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 16) != 0)
        return -1;
    static char request[4096];
    static char answer[512];
    const pid_t server = fork();
    if (server == 0) {
        for (int i = 0; i < rounds; ++i) {
            const int connection = accept(listener, NULL, NULL);
            if (connection < 0) _exit(1);
            size_t got = 0;
            while (got < sizeof request) {
                const ssize_t n = read(connection, request + got, sizeof request - got);
                if (n <= 0) break;
                got += (size_t)n;
            }
            (void)!write(connection, answer, sizeof answer);
            close(connection);
        }
        _exit(0);
    }
    memset(request, 'x', sizeof request);
    const double start = now_us();
    for (int i = 0; i < rounds; ++i) {
        const int connection = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(connection, (struct sockaddr*)&address, sizeof address) != 0) break;
        (void)!write(connection, request, sizeof request);
        size_t got = 0;
        while (got < sizeof answer) {
            const ssize_t n = read(connection, answer + got, sizeof answer - got);
            if (n <= 0) break;
            got += (size_t)n;
        }
        close(connection);
    }
    const double elapsed = (now_us() - start) / rounds;
    waitpid(server, NULL, 0);
    close(listener);
    unlink(address.sun_path);
    return elapsed;
}

int main(int argc, char** argv) {
    const long pages = argc > 1 ? atol(argv[1]) : 2000;
    const long page = sysconf(_SC_PAGESIZE);
    if (pages < 1 || page < 1) {
        fprintf(stderr, "usage: page_fault_cost [PAGES]\n");
        return 2;
    }

    const int calls = 20000;
    double start = now_us();
    for (int i = 0; i < calls; ++i) (void)getppid();
    printf("%-44s %8.2f us\n", "system call (getppid)", (now_us() - start) / calls);
    printf("%-44s %8.2f us\n", "open+read+close a sysfs file", read_file_us("/sys/devices/system/cpu/online", 2000));
    printf("%-44s %8.2f us\n", "open+read+close /etc/os-release", read_file_us("/etc/os-release", 2000));

    char* fresh = anonymous_pages(pages, page, 0);
    printf("%-44s %8.2f us per page\n", "page fault, new anonymous page", touch_each_page(fresh, pages, page, 1));

    char* populated = anonymous_pages(pages, page, 0);
    start = now_us();
    (void)madvise(populated, (size_t)(pages * page), MADV_POPULATE_WRITE); /* Linux >= 5.14 */
    const double populate = (now_us() - start) / (double)pages;
    printf("%-44s %8.2f + %.2f us per page\n", "MADV_POPULATE_WRITE, then the first write", populate,
           touch_each_page(populated, pages, page, 1));

    /* `fresh` is written: after fork() the child shares it copy-on-write. */
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        printf("%-44s %8.2f us per page\n", "copy-on-write fault in a forked child",
               touch_each_page(fresh, pages, page, 2));
        fflush(stdout);
        _exit(0);
    }
    waitpid(child, NULL, 0);

    const int forks = 50;
    start = now_us();
    for (int i = 0; i < forks; ++i) {
        child = fork();
        if (child == 0) _exit(0);
        waitpid(child, NULL, 0);
    }
    char label[64];
    snprintf(label, sizeof label, "fork+exit+wait, %ld written pages mapped", 2 * pages);
    printf("%-44s %8.0f us\n", label, (now_us() - start) / forks);
    printf("%-44s %8.2f us\n", "local socket: connect, 4 KiB out, 512 B back", local_socket_round_trip_us(2000));
    return 0;
}
