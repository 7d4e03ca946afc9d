// Fixes for the variables an MPI launcher passes its ranks, written on the
// launcher's own line. The ranks of an MPIJob's workers are started over ssh
// by the Launcher's mpirun: a worker container's env does not reach them (sshd
// starts each session with an environment of its own), what mpirun passes
// does. So a variable the ranks need is set with the launcher's option
// (`-x NAME=value`, `-genv NAME value`) in the launcher container's command
// or args: a new argv word, or inserted into its `sh -c` script, quoted as
// the shell needs. A value the launcher's options set themselves is left as
// written, with the instruction to remove it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "finding/finding.h"
#include "kubernetes/json_patch.h"
#include "kubernetes/pod_launch.h"
#include "kubernetes/workload_spec.h"

namespace launchguard::kubernetes {

// The container whose MPI launcher starts `container`'s ranks, where a fix
// can go on its line: the container itself when it runs one, else an
// MPIJob worker's Launcher; nullptr when none.
const ContainerLaunch* rank_launcher(const WorkloadSpec& workload, const std::vector<ContainerLaunch>& containers,
                                     const ContainerLaunch& container);

// Can the launcher's line carry this variable operation?
bool launcher_can_apply(const ContainerLaunch& launcher, const RemediationOp& op);

// "remove -x NCCL_IB_DISABLE=1 from the mpirun in container launcher ...":
// for an unset the launcher's own option makes impossible; "" otherwise.
std::string launcher_removal(const ContainerLaunch& launcher, const RemediationOp& op);

// Adds the launcher options for set_env operations, each once per launcher,
// in the order given.
class LauncherPatcher {
public:
    void set_env(PodPatchBuilder& builder, const ContainerLaunch& launcher, const std::string& name,
                 const std::string& value);

private:
    struct Added {
        std::vector<std::string> options;
        std::size_t shift = 0;  // words (argv) or bytes (script) added so far
    };
    std::map<const ContainerLaunch*, Added> added_;
};

}  // namespace launchguard::kubernetes
