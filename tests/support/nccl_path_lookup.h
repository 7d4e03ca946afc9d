// Lookups into a PathModel for tests: a GPU by bus id, a GPU pair in either
// order, the path from a GPU to any NIC. Each throws (failing the test) when
// the model lacks what the test names.
#pragma once

#include <stdexcept>
#include <string>

#include "nccl/nccl_paths.h"

namespace launchguard::testing {

inline const nccl::GpuPathVerdict& gpu_verdict(const nccl::PathModel& m, const std::string& busid) {
    for (const auto& g : m.gpus) {
        if (g.busid == busid) return g;
    }
    throw std::runtime_error("no GPU " + busid);
}

inline const nccl::GpuPairVerdict& pair_verdict(const nccl::PathModel& m, const std::string& a, const std::string& b) {
    for (const auto& p : m.pairs) {
        if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) return p;
    }
    throw std::runtime_error("no pair " + a + " " + b);
}

// The path from a GPU to a NIC (PathModel::nics order), after PXN and GDR.
inline nccl::Path path_to_nic(const nccl::PathModel& m, const std::string& gpu_busid, const std::string& nic) {
    const auto& g = gpu_verdict(m, gpu_busid);
    for (std::size_t i = 0; i < m.nics.size() && i < g.nic_paths.size(); ++i) {
        if (m.nics[i] == nic) return g.nic_paths[i];
    }
    throw std::runtime_error("no NIC " + nic);
}

}  // namespace launchguard::testing
