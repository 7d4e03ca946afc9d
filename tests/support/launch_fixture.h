// Builds a LaunchContext from a few lines of YAML, so rule tests speak the
// domain instead of assembling structs:
//
//   auto ctx = launch_from_yaml(R"(
//     env: {NCCL_TOPO_FILE: /opt/topo.xml, CUDA_VISIBLE_DEVICES: "0"}
//     files: {/opt/topo.xml: "<system version=\"1\"><cpu numaid=\"0\"/></system>\n"}
//     hwloc_xml: hwloc/nvidiaDGX2.xml      # as fixture_path finds it
//     sysfs: sysfs/h100-tuned              # under tests/fixtures
//     cpus: 0-3
//     job: {nodes: 64, gpus: 512}
//   )");
//
// Keys (all optional): env, files, directories, symlinks, unreadable,
// devices (character devices such as /dev/infiniband/uverbs0), unknown_files, hwloc_xml, sysfs, cpus, gpus (list of
// ids, as --gpus), interfaces, job {nodes,tasks,gpus}, runtime (bare|enroot|pyxis|kubernetes), container {shm, memlock
// (bytes or "unlimited"), nofile (a count or "unlimited"), caps, root}, host {env, files, directories, symlinks}, node
// {arch, page_size, cmdline, virtualization, numa_balancing}. Anything not given stays unknown ("not in the test
// fixture").
#pragma once

#include <string>

#include "context/launch_context.h"
#include "support/shared_fixtures.h"

namespace launchguard::testing {

LaunchContext launch_from_yaml(const std::string& yaml);

// Absolute path of a fixture: under tests/fixtures (written for launchguard) when
// it is there, else among the public fixtures (support/shared_fixtures.h).
std::string fixture_path(const std::string& relative);

// The nodes most rule tests start from: a two-socket node with an InfiniBand
// HCA, and a DGX-2 (16 GPUs behind NVSwitches).
inline const std::string kTwoNode = "hwloc_xml: hwloc/32em64t-2n8c2t-pci-normalio.xml\n";
inline const std::string kDgx2 = "hwloc_xml: hwloc/nvidiaDGX2.xml\n";

}  // namespace launchguard::testing
