// One container of a pod template read as a launch: its environment (env,
// envFrom, the shell in its command and args, what an MPI launcher passes
// it), its filesystem view (the pod's volumes it mounts), its resources and
// security context. Where a value cannot be known from the spec it is
// unknown with the reason, never a guess.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "context/launch_context.h"
#include "kubernetes/pod_file_view.h"
#include "kubernetes/shell_launch.h"
#include "kubernetes/workload_spec.h"

namespace launchguard::kubernetes {

// Where a variable the container gets was written: a patch can change only
// what the env list holds, since a shell export or `mpirun -x` overrides it.
enum class EnvSource { env_list, env_from, shell, launcher };

struct ContainerEnv {
    Environment values;
    // Variables whose value is known only when the pod runs (valueFrom,
    // `-x NAME=$X`, `export NAME=$(cmd)`), each with the one construct that
    // sets it: only these names are unknown.
    std::map<std::string, std::string, std::less<>> unknown;
    // Constructs that may set any variable (envFrom of an unread ConfigMap,
    // `source`, `module load`, `eval`), each naming where it is written.
    std::vector<std::string> unread;
    std::map<std::string, EnvSource, std::less<>> sources;
    bool env_from = false;
};

struct ContainerLaunch {
    const PodTemplate* pod = nullptr;
    std::string field;    // "spec.containers[0]", or "spec.initContainers[0]" for a native sidecar
    std::string pointer;  // "/spec/containers/0"
    std::string name;
    std::string image;
    int gpus = 0;                     // nvidia.com/gpu + amd.com/gpu limits (else requests)
    std::size_t resources_index = 0;  // its place in pod_resources(*pod).containers
    ContainerEnv env;                 // before what an MPI launcher passes it
    ShellLaunch shell;
    Fact<CommBackend> comm_backend;  // from command and args, with the container's own env
    std::shared_ptr<const PodFileView> files;
    ContainerFacts facts;
};

// ConfigMap data by name, where the reviewer has it.
using ConfigMapData = std::map<std::string, std::map<std::string, std::string>>;

// The containers of a template and its native sidecars (init containers with
// restartPolicy Always, first), validated; throws SpecError naming a
// malformed field. Other init containers run to completion before the
// workload and are not launches.
std::vector<ContainerLaunch> read_containers(const PodTemplate& pod, const ConfigMapData& config_maps);

// Requests and limits of every container of the pod, init and sidecar
// containers included (init containers first), and what keeps the pod out of
// the Guaranteed QoS class.
PodResources pod_resources(const PodTemplate& pod);

// Variables an MPI launcher passes to every rank (`-x NAME=value`, `-x NAME`
// with the launcher's own value), resolved against the launcher's env.
ContainerEnv rank_environment(const ContainerLaunch& launcher);

// `base` with `overlay` on top (the launcher's -x beats the worker's env).
ContainerEnv overlay_environment(ContainerEnv base, const ContainerEnv& overlay);

}  // namespace launchguard::kubernetes
