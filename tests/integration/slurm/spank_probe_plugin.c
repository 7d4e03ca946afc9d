/*
 * spank_probe_plugin.c — a TEST-ONLY SPANK plugin that proves the integration
 * harness end to end: a plugin listed in the test cluster's plugstack is loaded
 * by srun/sbatch/slurmd/slurmstepd, its hooks run, and its messages reach the
 * user.  It is not part of launchguard.
 *
 * plugstack arguments (key=value, unknown keys are an error, like pyxis):
 *   log=FILE          append one line per hook call to FILE:
 *                     "lgprobe hook=<hook> ctx=<context> uid=<ruid> euid=<euid> pid=<pid> [task=<id> cpus=<mask>]"
 *   fail=task_init    make slurm_spank_task_init report an error and return -1
 *                     (with the plugin `required`, the task exits 1)
 *
 * Always, in task_init, it writes to the task's stderr (which srun shows):
 *   slurm_error:     "slurmstepd-<node>: error: lgprobe: task_init marker task=<id> ..."
 *   slurm_spank_log: "slurmstepd-<node>: lgprobe: spank_log marker task=<id>"
 * and slurm_info "lgprobe: info marker" (which does NOT reach srun's stderr by
 * default: slurmstepd forwards ERROR and above).  Build against the deployed
 * Slurm's headers: the plugin loader requires the same major.minor.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(lgprobe, 1);

static const char* probe_log_path;
static int probe_fail_task_init;

static const char* probe_context_name(void) {
    switch (spank_context()) {
        case S_CTX_LOCAL:
            return "local";
        case S_CTX_REMOTE:
            return "remote";
        case S_CTX_ALLOCATOR:
            return "allocator";
        case S_CTX_SLURMD:
            return "slurmd";
        case S_CTX_JOB_SCRIPT:
            return "job_script";
        default:
            return "error";
    }
}

static int probe_parse_args(int ac, char** av) {
    probe_log_path = NULL;
    probe_fail_task_init = 0;
    for (int i = 0; i < ac; i++) {
        if (strncmp(av[i], "log=", 4) == 0 && av[i][4] != '\0') {
            probe_log_path = av[i] + 4;
        } else if (strcmp(av[i], "fail=task_init") == 0) {
            probe_fail_task_init = 1;
        } else {
            slurm_error("lgprobe: unknown plugstack argument '%s'", av[i]);
            return -1;
        }
    }
    return 0;
}

/* The CPU mask as a list like "0,1" (plenty for test machines). */
static void probe_cpus(char* buf, size_t len) {
    cpu_set_t set;
    size_t used = 0;

    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        snprintf(buf, len, "?");
        return;
    }
    for (int c = 0; c < CPU_SETSIZE && used + 8 < len; c++) {
        if (CPU_ISSET(c, &set)) used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "", c);
    }
}

static void probe_record(spank_t sp, const char* hook) {
    char line[512];
    char cpus[256];
    int task = -1;
    int n;

    if (probe_log_path == NULL) return;
    n = snprintf(line, sizeof(line), "lgprobe hook=%s ctx=%s uid=%d euid=%d pid=%d", hook, probe_context_name(),
                 (int)getuid(), (int)geteuid(), (int)getpid());
    if (spank_get_item(sp, S_TASK_ID, &task) == ESPANK_SUCCESS) {
        probe_cpus(cpus, sizeof(cpus));
        n += snprintf(line + n, sizeof(line) - (size_t)n, " task=%d cpus=%s", task, cpus);
    }
    snprintf(line + n, sizeof(line) - (size_t)n, "\n");

    int fd = open(probe_log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) {
        slurm_error("lgprobe: cannot open %s: %s", probe_log_path, strerror(errno));
        return;
    }
    if (write(fd, line, strlen(line)) < 0) slurm_error("lgprobe: cannot write %s: %s", probe_log_path, strerror(errno));
    close(fd);
}

int slurm_spank_init(spank_t sp, int ac, char** av) {
    if (probe_parse_args(ac, av) != 0) return -1;
    probe_record(sp, "init");
    return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
    char cpus[256];
    int task = -1;

    (void)ac;
    (void)av;
    probe_record(sp, "task_init");
    spank_get_item(sp, S_TASK_ID, &task);
    probe_cpus(cpus, sizeof(cpus));
    slurm_error("lgprobe: task_init marker task=%d pid=%d uid=%d cpus=%s", task, (int)getpid(), (int)getuid(), cpus);
    slurm_spank_log("lgprobe: spank_log marker task=%d", task);
    slurm_info("lgprobe: info marker task=%d", task);
    if (probe_fail_task_init) {
        slurm_error("lgprobe: blocking task %d (fail=task_init)", task);
        return -1;
    }
    return 0;
}

/* Hooks that only record that (and where) they ran. */
#define PROBE_RECORD_HOOK(hook)                             \
    int slurm_spank_##hook(spank_t sp, int ac, char** av) { \
        (void)ac;                                           \
        (void)av;                                           \
        probe_record(sp, #hook);                            \
        return 0;                                           \
    }

PROBE_RECORD_HOOK(init_post_opt)
PROBE_RECORD_HOOK(user_init)
PROBE_RECORD_HOOK(task_init_privileged)
PROBE_RECORD_HOOK(task_post_fork)
PROBE_RECORD_HOOK(task_exit)
PROBE_RECORD_HOOK(exit)
