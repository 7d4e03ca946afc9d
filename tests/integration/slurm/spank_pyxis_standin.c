/*
 * spank_private_mount.c — a TEST-ONLY SPANK plugin that gives each task a
 * private mount namespace in which one directory is hidden under an empty
 * tmpfs.  It stands in for pyxis/enroot in plugin_test.sh: listed BEFORE
 * launchguard, it changes the task's view of the filesystem the way joining a
 * container does (SLURM.md §2.2-2.3), so a file that exists on the host is
 * absent for the task.  launchguard's task_init runs later in the same task
 * process and must judge the task's view, not the host's.  Not part of
 * launchguard.
 *
 * plugstack arguments (key=value; unknown keys are an error):
 *   dir=DIR    the directory to hide (required; absolute path, must exist)
 *
 * Hook: slurm_spank_task_init_privileged (REMOTE, task child, root, before the
 * privilege drop; SLURM.md §1.1).  It does
 *   unshare(CLONE_NEWNS);
 *   mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);   // nothing leaks to the host
 *   mount("tmpfs", DIR, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755");
 * and reports "lgprivmount: task <id>: DIR hidden in a private mount namespace"
 * with slurm_spank_log (reaches srun's stderr).  Any failure is reported with
 * slurm_error and returns -1 (with the plugin `required`, the task exits 1),
 * so a broken environment never passes the container-view test silently.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <slurm/spank.h>

SPANK_PLUGIN(lgprivmount, 1);

static int privmount_parse_args(int ac, char **av, const char **dir)
{
	int i;

	*dir = NULL;
	for (i = 0; i < ac; i++) {
		if (strncmp(av[i], "dir=", 4) == 0 && av[i][4] == '/') {
			*dir = av[i] + 4;
		} else {
			slurm_error("lgprivmount: plugstack.conf: %s: expected dir=/absolute/path", av[i]);
			return -1;
		}
	}
	if (*dir == NULL) {
		slurm_error("lgprivmount: plugstack.conf: dir=DIR is required");
		return -1;
	}
	return 0;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	const char *dir;
	struct stat st;
	int task = -1;

	if (!spank_remote(sp))
		return 0;
	if (privmount_parse_args(ac, av, &dir) != 0)
		return -1;
	(void)spank_get_item(sp, S_TASK_ID, &task);
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		slurm_error("lgprivmount: %s is not a directory on the host", dir);
		return -1;
	}
	if (unshare(CLONE_NEWNS) != 0) {
		slurm_error("lgprivmount: unshare(CLONE_NEWNS): %s", strerror(errno));
		return -1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		slurm_error("lgprivmount: making mounts private: %s", strerror(errno));
		return -1;
	}
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755") != 0) {
		slurm_error("lgprivmount: mounting a tmpfs over %s: %s", dir, strerror(errno));
		return -1;
	}
	slurm_spank_log("lgprivmount: task %d: %s hidden in a private mount namespace", task, dir);
	return 0;
}
