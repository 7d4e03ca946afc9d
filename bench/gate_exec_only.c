/* gate_exec_only [PROGRAM ARGS...]: the baseline for gate_bench. Linked
 * statically like launchguard-gate, it does what the gate does when it has
 * nothing to judge: execvp its arguments. With none, it exits 0 at once (the
 * workload both runs exec). */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc < 2) return 0;
    execvp(argv[1], argv + 1);
    perror("gate_exec_only: execvp");
    return 127;
}
