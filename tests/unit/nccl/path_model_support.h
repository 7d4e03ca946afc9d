// Helpers of the path model tests: the topology fixtures (own and public),
// the model under an environment and release, and a GPU, GPU pair or NIC path of it.
#pragma once

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "nccl/nccl_paths.h"
#include "support/shared_fixtures.h"
#include "support/text.h"

namespace launchguard::nccl::path_testing {

inline std::string own_fixture(const std::string& name) {
    return launchguard::testing::read_all(std::string(LAUNCHGUARD_FIXTURES) + "/nccl-paths/" + name);
}

// A public topology file from LAUNCHGUARD_SHARED_FIXTURES; the running test
// is skipped, by name, without them.
inline std::string shared_fixture(const std::string& name) {
    return launchguard::testing::read_all(launchguard::testing::shared_fixture_path("nccl-topo/" + name));
}

inline PathModel model_of(const std::string& xml, std::map<std::string, std::string> env = {},
                          std::optional<Version> version = std::nullopt) {
    PathSettings settings;
    settings.env = std::move(env);
    settings.nccl_version = version;
    return compute_paths(parse_topology_tree(xml), settings);
}

// A GPU by bus id, a GPU pair in either order, the path from a GPU to any
// NIC. Each throws (failing the test) when the model lacks what the test names.
inline const GpuPathVerdict& gpu(const PathModel& m, const std::string& busid) {
    for (const auto& g : m.gpus) {
        if (g.busid == busid) return g;
    }
    throw std::runtime_error("no GPU " + busid);
}

inline const GpuPairVerdict& pair(const PathModel& m, const std::string& a, const std::string& b) {
    for (const auto& p : m.pairs) {
        if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) return p;
    }
    throw std::runtime_error("no pair " + a + " " + b);
}

// The path from a GPU to a NIC (PathModel::nics order), after PXN and GDR.
inline Path path_to(const PathModel& m, const std::string& gpu_busid, const std::string& nic) {
    const auto& g = gpu(m, gpu_busid);
    for (std::size_t i = 0; i < m.nics.size() && i < g.nic_paths.size(); ++i) {
        if (m.nics[i] == nic) return g.nic_paths[i];
    }
    throw std::runtime_error("no NIC " + nic);
}

}  // namespace launchguard::nccl::path_testing
