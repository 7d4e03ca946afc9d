// Everything launchguard knows about one launch. Probes fill it; rules only
// read it. Every fact may be unknown, with the reason it is unknown.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "context/cpu_set.h"
#include "context/fact.h"
#include "context/file_view.h"
#include "context/node_facts.h"
#include "context/topology.h"

namespace launchguard {

// Ordered so that reports and evidence are stable.
using Environment = std::map<std::string, std::string, std::less<>>;

// Where the task runs, which decides what the host can see that the task cannot.
enum class Runtime {
    bare,        // directly on the host
    enroot,      // enroot container (a tmpfs on /var/run, /etc/nccl.conf not mounted)
    pyxis,       // enroot started by pyxis from Slurm
    kubernetes,  // a Pod
    unknown,
};
std::string_view to_string(Runtime runtime);

// The collective communication library the processes use (PyTorch's
// process group backend); src/context/comm_backend.h reads it from a command.
enum class CommBackend { nccl, gloo, mpi };
std::string_view to_string(CommBackend backend);

struct JobShape {
    Fact<int> nodes;
    Fact<int> tasks;
    Fact<int> total_gpus;  // GPUs across the whole job (decides e.g. net.qps-low)
};

struct ContainerFacts {
    Fact<std::uint64_t> shm_bytes;                  // size of /dev/shm as the task sees it
    Fact<std::optional<std::uint64_t>> memlock;     // RLIMIT_MEMLOCK soft limit; nullopt = unlimited
    Fact<std::optional<std::uint64_t>> open_files;  // RLIMIT_NOFILE soft limit; nullopt = unlimited
    Fact<std::vector<std::string>> capabilities;    // effective capabilities, "CAP_IPC_LOCK"
    Fact<bool> runs_as_root;
    // What the launcher says it starts, as written: pyxis --container-image,
    // a pod's image. Evidence only; the image's content stays unknown.
    Fact<std::string> image;
    // Mounts the launcher adds, as written (pyxis --container-mounts entries
    // "SRC:DST[:FLAGS]"). Evidence only: the file view says what is visible.
    std::vector<std::string> requested_mounts;
    // RDMA devices the launcher hands the container, as written (a pod's
    // rdma/ib, nvidia.com/hostdev, vpc.amazonaws.com/efa resources): evidence
    // that the node has an IB/RoCE fabric the job will use. Unknown where the
    // launcher does not say (devices may also come through DRA claims).
    Fact<std::vector<std::string>> rdma_devices;
};

// Requests and limits of one container of a Kubernetes pod, quantities
// parsed (CPU in millicores, memory in bytes); absent when not written.
struct ContainerResources {
    std::string name;  // "spec.containers[0] (trainer)"
    std::optional<std::int64_t> cpu_request_milli;
    std::optional<std::int64_t> cpu_limit_milli;
    std::optional<std::int64_t> memory_request_bytes;
    std::optional<std::int64_t> memory_limit_bytes;
};

// Every container of a pod (init and sidecar containers included) and those
// that keep it out of the Guaranteed QoS class, with why
// ("spec.containers[2] (sidecar): no CPU limit"), found once per pod.
struct PodResources {
    std::vector<ContainerResources> containers;
    std::vector<std::string> qos_breakers;
};

// What the host side of a container launch sees, for propagation rules
// (topo.not-propagated, conf.host-not-visible). Absent when the adapter
// cannot see the host (a task already inside its container, a bare launch).
struct HostView {
    Fact<Environment> env;
    std::shared_ptr<const FileView> files;
};

struct LaunchContext {
    Runtime runtime = Runtime::unknown;
    Fact<Environment> env;  // the task's environment, as NCCL reads it
    // Variables the task gets whose value launchguard cannot know before it
    // runs, each with the one construct that sets it ("spec.containers[0].
    // env[2] (NCCL_SOCKET_IFNAME): valueFrom.fieldRef is read when the pod
    // starts", "line 12: export NCCL_IB_HCA=$(...)"). Such a construct can
    // set only that name: every other name stays decided. Not in `env`.
    std::map<std::string, std::string, std::less<>> env_unknown;
    // Constructs that may set ANY variable and that launchguard cannot read
    // (a pod's envFrom of an unread ConfigMap, `source FILE`, `module load`,
    // `eval`, `export $(...)`), each naming itself and where it is written:
    // a name absent from `env` is then unknown, not unset, while the names
    // `env` holds are decided.
    std::vector<std::string> env_unread_sources;
    std::shared_ptr<const FileView> files;  // the task's filesystem view; never null once probed
    Fact<CpuSet> cpu_mask;                  // sched_getaffinity of the task
    Fact<std::vector<Gpu>> gpus;            // GPUs assigned to the task, resolved against the topology
    Fact<NodeTopology> topology;
    Fact<std::vector<NetInterface>> interfaces;  // netdevs in the task's network namespace
    // --cpu-bind as the launch's spec writes it ("mask_cpu:0x3,0xc"): known to
    // spec front ends; a live task sees only slurmd's rewrite in SLURM_CPU_BIND.
    Fact<std::string> requested_cpu_bind;
    NodeFacts node;
    // Unknown unless the spec selects it: rules that judge NCCL then run as
    // for NCCL. A known gloo or mpi makes the NCCL-only rules not applicable.
    Fact<CommBackend> comm_backend;
    JobShape job;
    ContainerFacts container;
    // Kubernetes: every container of the pod (init and sidecars included),
    // which decides its QoS class; unknown for other runtimes.
    // One PodResources is shared by the contexts of all the pod's containers,
    // so that judging each of n containers costs O(1) here, not O(n).
    Fact<std::shared_ptr<const PodResources>> pod_resources;
    // The index in pod_resources->containers of the container this context describes.
    std::size_t pod_judged_container = 0;
    std::optional<HostView> host;
};

}  // namespace launchguard
