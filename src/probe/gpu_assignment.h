// Which of the node's GPUs a task has, resolved against the node topology so
// rules can compare bus ids and CPU locality.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "context/fact.h"
#include "context/launch_context.h"
#include "context/topology.h"
#include "util/error.h"

namespace launchguard {

// Where the assignment comes from, first match wins:
//   1. `flag` (the CLI's --gpus): the caller knows best.
//   2. SLURM_STEP_GPUS: physical indices of the step's GPUs. Preferred over
//      CUDA_VISIBLE_DEVICES because Slurm renumbers the latter from 0 when
//      cgroup ConstrainDevices is on.
//   3. NVIDIA_VISIBLE_DEVICES: what the NVIDIA container runtime injects;
//      "all" = every GPU, "none"/"void"/"" = none.
//   4. CUDA_VISIBLE_DEVICES: indices are relative to the devices the task
//      can open, so under a cgroup device constraint they may not be physical;
//      the fact's source says so.
//   5. nothing set: every GPU of the node is visible, as CUDA behaves.
// Items may be indices, UUIDs ("GPU-...", a unique prefix is enough, as in
// CUDA) or PCI bus ids. The fact is unknown when the topology is unknown (except
// for an explicit "none") or when an item names no GPU of this node.
Fact<std::vector<Gpu>> assigned_gpus(const Environment& env, const std::optional<std::string>& flag,
                                     const Fact<NodeTopology>& topo);

// Resolves one comma-separated list; `origin` ("SLURM_STEP_GPUS") names it in errors.
Result<std::vector<Gpu>> resolve_gpu_list(std::string_view list, const NodeTopology& topo, std::string_view origin);

}  // namespace launchguard
