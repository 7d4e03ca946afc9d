/*
 * spank_pyxis_standin.c — a TEST-ONLY SPANK plugin that plays pyxis's part in
 * plugin_test.sh, because neither pyxis nor enroot is packaged for Debian.
 * Not part of launchguard.
 *
 * What it copies from pyxis v0.24.0 (pyxis_slurmstepd.c, args.c):
 *  - it is named "pyxis" and registers --container-image, --container-name
 *    and --container-mounts, so Slurm hands them to every plugin on the
 *    remote side as _SLURM_SPANK_OPTION_pyxis_* exactly as for pyxis;
 *  - without a container option its task_init returns at once;
 *  - with one, in task_init (the task child, as the job user, before
 *    launchguard's task_init when listed first) the task enters a new user
 *    and mount namespace (enroot's, without remap-root: the user's own ids are
 *    mapped) whose root is an "image": a directory DATA/pyxis_<job>.<step>
 *    (pyxis_<job>_<name> for --container-name), bound onto itself as enroot
 *    binds $ENROOT_DATA_PATH/<container>, holding the host's /usr, /bin,
 *    /lib*, /sbin, /proc, /sys and /dev (enroot's 10-system.fstab binds the
 *    last three), the test's state directory (share=, the job's work dir and
 *    fixtures), and an /etc of its own holding only passwd, group, hosts,
 *    nsswitch.conf and ld.so.cache.  So the host's /etc/nccl.conf, /opt and
 *    /var/run are not in the container, as in an image without them;
 *  - --container-mounts=SRC[:DST[:ro]],... are bind-mounted (DST defaults to
 *    SRC), then it pivots into the new root and returns to the task's working
 *    directory when the container has it.
 * What it leaves out: images, the image's environment (this "image" sets no
 * variables, so the job's environment is the container's), seccomp, cgroups.
 *
 * plugstack arguments (key=value; unknown keys are an error):
 *   data=DIR     enroot's data directory, writable by the job user (required)
 *   share=DIR    a host directory visible in the container at the same path
 *
 * Every failure is reported with slurm_error and returns -1 (listed
 * `required`, the task exits 1), so a broken environment never passes a
 * container test silently.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(pyxis, 1);

static int standin_opt_cb(int val, const char* optarg, int remote) {
    (void)val;
    (void)optarg;
    (void)remote;
    return 0;
}

static struct spank_option standin_options[] = {
    {"container-image", "[USER@][REGISTRY#]IMAGE[:TAG]|PATH", "[stand-in] the container image", 1, 0, standin_opt_cb},
    {"container-name", "NAME", "[stand-in] a named container", 1, 1, standin_opt_cb},
    {"container-mounts", "SRC[:DST[:ro]][,...]", "[stand-in] bind mounts", 1, 2, standin_opt_cb},
    SPANK_OPTIONS_TABLE_END};

struct standin_args {
    const char* data;
    const char* share;
};

static int standin_parse_args(int ac, char** av, struct standin_args* args) {
    int i;

    memset(args, 0, sizeof(*args));
    for (i = 0; i < ac; i++) {
        if (strncmp(av[i], "data=", 5) == 0 && av[i][5] == '/') {
            args->data = av[i] + 5;
        } else if (strncmp(av[i], "share=", 6) == 0 && av[i][6] == '/') {
            args->share = av[i] + 6;
        } else {
            slurm_error("pyxis-standin: plugstack.conf: %s: expected data=/dir or share=/dir", av[i]);
            return -1;
        }
    }
    if (args->data == NULL) {
        slurm_error("pyxis-standin: plugstack.conf: data=DIR is required");
        return -1;
    }
    return 0;
}

int slurm_spank_init(spank_t sp, int ac, char** av) {
    struct spank_option* opt;

    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_LOCAL && spank_context() != S_CTX_REMOTE && spank_context() != S_CTX_ALLOCATOR)
        return 0;
    for (opt = standin_options; opt->name != NULL; opt++) {
        spank_err_t rc = spank_option_register(sp, opt);
        if (rc != ESPANK_SUCCESS) {
            slurm_error("pyxis-standin: registering --%s: %s", opt->name, spank_strerror(rc));
            return -1;
        }
    }
    return 0;
}

static int write_file(const char* path, const char* text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t len = (ssize_t)strlen(text);

    if (fd < 0) return -1;
    if (write(fd, text, (size_t)len) != len) {
        close(fd);
        return -1;
    }
    return close(fd);
}

/* mkdir -p for the directories above `path` (inside the new root). */
static int make_parents(const char* path) {
    char buf[PATH_MAX];
    char* p;

    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) return -1;
    for (p = buf + 1; *p != '\0'; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

/* Bind `src` at `root`+`dst`, creating a file or directory to mount on. */
static int bind_into(const char* root, const char* src, const char* dst, int readonly) {
    char target[PATH_MAX];
    struct stat st;

    if (snprintf(target, sizeof(target), "%s%s", root, dst) >= (int)sizeof(target)) {
        slurm_error("pyxis-standin: %s: path too long", dst);
        return -1;
    }
    if (stat(src, &st) != 0) {
        slurm_error("pyxis-standin: mount source %s: %s", src, strerror(errno));
        return -1;
    }
    if (make_parents(target) != 0) {
        slurm_error("pyxis-standin: creating the parents of %s: %s", target, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        if (mkdir(target, 0755) != 0 && errno != EEXIST) {
            slurm_error("pyxis-standin: mkdir %s: %s", target, strerror(errno));
            return -1;
        }
    } else {
        int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            slurm_error("pyxis-standin: creating %s: %s", target, strerror(errno));
            return -1;
        }
        close(fd);
    }
    if (mount(src, target, NULL, MS_BIND | MS_REC, NULL) != 0) {
        slurm_error("pyxis-standin: bind %s on %s: %s", src, target, strerror(errno));
        return -1;
    }
    if (readonly && mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) != 0) {
        slurm_error("pyxis-standin: read-only %s: %s", target, strerror(errno));
        return -1;
    }
    return 0;
}

/* The top-level entries of the host's / an image would have: symlinks are
 * copied (Debian's merged /usr: /bin -> usr/bin), directories bound. */
static int add_system_tree(const char* root) {
    static const char* const entries[] = {"usr",   "bin",    "sbin", "lib", "lib32",
                                          "lib64", "libx32", "proc", "sys", "dev"};
    static const char* const etc_files[] = {"passwd", "group", "hosts", "nsswitch.conf", "ld.so.cache"};
    char host_path[PATH_MAX];
    char target[PATH_MAX];
    char link[PATH_MAX];
    struct stat st;
    size_t i;

    for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        snprintf(host_path, sizeof(host_path), "/%s", entries[i]);
        if (lstat(host_path, &st) != 0) continue;
        if (S_ISLNK(st.st_mode)) {
            ssize_t n = readlink(host_path, link, sizeof(link) - 1);
            if (n < 0) return -1;
            link[n] = '\0';
            if (snprintf(target, sizeof(target), "%s/%s", root, entries[i]) >= (int)sizeof(target)) return -1;
            if (symlink(link, target) != 0 && errno != EEXIST) {
                slurm_error("pyxis-standin: symlink %s: %s", target, strerror(errno));
                return -1;
            }
        } else if (S_ISDIR(st.st_mode) && bind_into(root, host_path, host_path, 0) != 0) {
            return -1;
        }
    }
    for (i = 0; i < sizeof(etc_files) / sizeof(etc_files[0]); i++) {
        snprintf(host_path, sizeof(host_path), "/etc/%s", etc_files[i]);
        if (access(host_path, R_OK) == 0 && bind_into(root, host_path, host_path, 0) != 0) return -1;
    }
    return 0;
}

/* --container-mounts=SRC[:DST[:FLAGS]][,...] as pyxis splits it. */
static int add_user_mounts(const char* root, const char* spec) {
    char* copy = strdup(spec);
    char* save = NULL;
    char* item;
    int rc = 0;

    if (copy == NULL) return -1;
    for (item = strtok_r(copy, ",", &save); item != NULL && rc == 0; item = strtok_r(NULL, ",", &save)) {
        char* src = item;
        char* dst = strchr(src, ':');
        char* flags = NULL;
        if (dst != NULL) {
            *dst++ = '\0';
            flags = strchr(dst, ':');
            if (flags != NULL) *flags++ = '\0';
        } else {
            dst = src;
        }
        if (src[0] != '/' || dst[0] != '/') {
            slurm_error("pyxis-standin: --container-mounts entry %s: paths must be absolute", item);
            rc = -1;
            break;
        }
        rc = bind_into(root, src, dst, flags != NULL && strcmp(flags, "ro") == 0);
    }
    free(copy);
    return rc;
}

static int enter_user_namespace_dumpable(uid_t uid, gid_t gid) {
    char map[64];

    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        slurm_error("pyxis-standin: unshare(CLONE_NEWUSER|CLONE_NEWNS): %s", strerror(errno));
        return -1;
    }
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    if (write_file("/proc/self/uid_map", map) != 0) {
        slurm_error("pyxis-standin: uid_map: %s", strerror(errno));
        return -1;
    }
    if (write_file("/proc/self/setgroups", "deny") != 0) {
        slurm_error("pyxis-standin: setgroups: %s", strerror(errno));
        return -1;
    }
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    if (write_file("/proc/self/gid_map", map) != 0) {
        slurm_error("pyxis-standin: gid_map: %s", strerror(errno));
        return -1;
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        slurm_error("pyxis-standin: making mounts private: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int enter_user_namespace(void) {
    uid_t uid = getuid();
    gid_t gid = getgid();
    /* After Slurm's setuid to the job user the task is not dumpable, so its
     * /proc/self files belong to root and the id maps cannot be written. */
    int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    int rc = -1;

    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) {
        slurm_error("pyxis-standin: PR_SET_DUMPABLE: %s", strerror(errno));
        return -1;
    }
    rc = enter_user_namespace_dumpable(uid, gid);
    (void)prctl(PR_SET_DUMPABLE, dumpable > 0 ? dumpable : 0, 0, 0, 0);
    return rc;
}

static int pivot_into(const char* root, const char* cwd) {
    char old[PATH_MAX];

    if (snprintf(old, sizeof(old), "%s/.oldroot", root) >= (int)sizeof(old)) {
        slurm_error("pyxis-standin: %s: path too long", root);
        return -1;
    }
    if ((mkdir(old, 0700) != 0 && errno != EEXIST) || chdir(root) != 0 ||
        syscall(SYS_pivot_root, ".", ".oldroot") != 0) {
        slurm_error("pyxis-standin: pivot_root into %s: %s", root, strerror(errno));
        return -1;
    }
    /* The directory stays: other tasks of the step use the same root. */
    if (chdir("/") != 0 || umount2("/.oldroot", MNT_DETACH) != 0) {
        slurm_error("pyxis-standin: detaching the old root: %s", strerror(errno));
        return -1;
    }
    if (cwd[0] != '\0' && chdir(cwd) != 0) (void)chdir("/");
    return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
    struct standin_args args;
    char* image = NULL;
    char* name = NULL;
    char* mounts = NULL;
    char cwd[PATH_MAX] = "";
    char rootfs[PATH_MAX];
    uint32_t job = 0;
    uint32_t step = 0;
    int task = -1;

    if (!spank_remote(sp)) return 0;
    if (standin_parse_args(ac, av, &args) != 0) return -1;
    (void)spank_option_getopt(sp, &standin_options[0], &image);
    (void)spank_option_getopt(sp, &standin_options[1], &name);
    (void)spank_option_getopt(sp, &standin_options[2], &mounts);
    if (image == NULL && name == NULL) return 0; /* no container: pyxis returns at once, the task stays on the host */
    (void)spank_get_item(sp, S_TASK_ID, &task);
    (void)spank_get_item(sp, S_JOB_ID, &job);
    (void)spank_get_item(sp, S_JOB_STEPID, &step);
    if (getcwd(cwd, sizeof(cwd)) == NULL) cwd[0] = '\0';

    if (name != NULL)
        snprintf(rootfs, sizeof(rootfs), "%s/pyxis_%u_%s", args.data, job, name);
    else
        snprintf(rootfs, sizeof(rootfs), "%s/pyxis_%u.%u", args.data, job, step);
    if (mkdir(rootfs, 0755) != 0 && errno != EEXIST) {
        slurm_error("pyxis-standin: mkdir %s: %s", rootfs, strerror(errno));
        return -1;
    }
    if (enter_user_namespace() != 0) return -1;
    if (mount(rootfs, rootfs, NULL, MS_BIND, NULL) != 0) {
        slurm_error("pyxis-standin: binding %s onto itself: %s", rootfs, strerror(errno));
        return -1;
    }
    if (add_system_tree(rootfs) != 0) return -1;
    if (args.share != NULL && bind_into(rootfs, args.share, args.share, 0) != 0) return -1;
    if (mounts != NULL && add_user_mounts(rootfs, mounts) != 0) return -1;
    if (pivot_into(rootfs, cwd) != 0) return -1;
    slurm_spank_log("pyxis-standin: task %d: in container %s", task, image != NULL ? image : name);
    return 0;
}
