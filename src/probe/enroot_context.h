// The launch as an enroot hook sees it (`launchguard enroot-hook`): hooks run
// before the container switches root, with the host (job) environment and
// the container's rootfs, environment file and pending mounts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "context/launch_context.h"
#include "util/error.h"

namespace launchguard {

struct EnrootHookInputs {
    std::string rootfs;                    // $ENROOT_ROOTFS
    std::string environ_file;              // $ENROOT_ENVIRON
    std::string mounts_file;               // $ENROOT_MOUNTS
    std::vector<std::string> mounts_dirs;  // enroot's mounts.d directories, in order
    Environment host_env;                  // the hook's own environment: the host/job side
    std::string host_root = "/";           // the host filesystem (tests: a fixture tree)
    std::optional<std::string> hwloc_xml;
    std::optional<std::string> sysfs_root;
};

// Reads the hook's inputs from its environment: ENROOT_ROOTFS, ENROOT_ENVIRON,
// ENROOT_MOUNTS (required) and ENROOT_SYSCONF_PATH / ENROOT_CONFIG_PATH for
// the mounts.d directories. Errors name the missing variable.
Result<EnrootHookInputs> enroot_inputs_from_environment(const Environment& env);

// Under pyxis the task env is the job env overlaid with the container's
// environment file (container values win); plain enroot clears the
// environment and loads only the file (pyxis: spank_import_container_env in
// pyxis_slurmstepd.c; enroot: load_environment_fd in bin/common.h clears the
// environment first).
Result<LaunchContext> build_enroot_context(const EnrootHookInputs& inputs);

}  // namespace launchguard
