// A profile is the reference architecture a launch is held against: what the
// node class should look like, which NCCL settings it needs, and what to do
// when each rule fires. Profiles are YAML with a strict schema
// (docs/profiles.md); unknown keys are errors. The same schema in JSON is the
// compiled form (`launchguard profile compile`), which the Slurm task checks
// read without a YAML library.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "finding/finding.h"
#include "util/error.h"

namespace launchguard {

struct Profile {
    std::string name;
    std::string description;
    std::string origin;  // "embedded:default" or the file path it was loaded from

    struct Node {
        std::optional<std::string> arch;     // "x86_64" / "aarch64"
        bool virtual_machine = false;        // the node class is a VM (topology file, IOMMU rules)
        bool grace = false;                  // NVIDIA Grace CPU (SMMU, 64 KiB pages)
        bool mnnvl = false;                  // multi-node NVLink (GB200/GB300 NVL72)
        bool nvswitch = false;               // NVLink SHARP capable
        std::optional<int> gpus;             // GPUs per node
        std::optional<int> rdma_nics;        // RDMA NICs per node
        std::optional<int> active_ib_ports;  // ACTIVE IB/RoCE ports per node
        std::optional<double> ib_rate_gbps;  // minimum port rate
        std::optional<long> page_size;       // bytes
        std::vector<std::string> hcas;       // the HCAs jobs should use
        bool gpudirect_rdma = false;         // the class needs GPUDirect RDMA (net.gdr-unavailable)
        // What the node class gives containers, where the profile says
        // (absent: not stated, and rules that depend on it say less):
        // the kubelet's CPU Manager policy, "none" or "static" (cpu.k8s-not-pinnable)...
        std::optional<std::string> cpu_manager_policy;
        // ...and the container runtime's RLIMIT_MEMLOCK (mem.memlock):
        // a number of bytes, or nullopt inside for unlimited.
        std::optional<std::optional<std::uint64_t>> runtime_memlock;
        bool operator==(const Node&) const = default;
    } node;

    struct Topology {
        bool required = false;       // a topology file must be in effect
        std::string host_path;       // where the node class keeps it
        std::string container_path;  // where containers should see it
        bool operator==(const Topology&) const = default;
    } topology;

    struct Nccl {
        std::optional<std::string> net;         // recommended NCCL_NET ("IB", plugin name)
        std::optional<std::string> net_plugin;  // library the container must carry, e.g. "libnccl-net.so"
        std::optional<std::string> ib_hca;      // recommended NCCL_IB_HCA
        struct Qps {
            int min = 4;
            int min_total_gpus = 512;
            double min_link_gbps = 800;  // applies when the node's ports run at least this fast
            bool operator==(const Qps&) const = default;
        };
        std::optional<Qps> qps;                  // net.qps-low threshold; absent = rule quiet
        std::optional<std::string> min_version;  // oldest NCCL the images may carry ("2.27.3"); nccl.version-old
        bool operator==(const Nccl&) const = default;
    } nccl;

    struct Cpu {
        std::string governor = "performance";
        int min_idle_states = 3;            // power.cstates fires at or below min-1
        double min_affinity_overlap = 0.5;  // cpu.affinity-partial
        bool numa_balancing_allowed = false;
        bool operator==(const Cpu&) const = default;
    } cpu;

    struct Container {
        std::uint64_t shm_min_bytes = 1ULL << 30;
        bool memlock_unlimited = true;
        std::uint64_t open_files_min = 65536;  // RLIMIT_NOFILE floor (mem.nofile-low)
        int open_files_min_job_gpus = 64;      // ... for jobs of at least this many GPUs
        bool operator==(const Container&) const = default;
    } container;

    struct Virtualization {
        bool require_iommu_passthrough = false;  // block-level on Grace VM profiles
        bool require_nic_ats = false;            // passed-through NICs must have ATS on (virt.ats-off)
        bool operator==(const Virtualization&) const = default;
    } virt;

    std::map<std::string, Action, std::less<>> actions;  // per-rule overrides

    // The action configured for a rule, or fallback when the profile is silent.
    [[nodiscard]] Action action_for(std::string_view rule, Action fallback) const;

    // Equal settings; `origin` (where each was read from) is not compared.
    bool operator==(const Profile& other) const;
};

// Parses YAML text; `origin` names the file in every error. Which rule ids
// exist under `rules:` is the rule registry's to say, a layer above this one,
// so it is passed in: engine/profile_loader.h binds it to the registry.
using KnownRuleCheck = std::function<bool(const std::string&)>;
Result<Profile> parse_profile_with(std::string_view yaml, std::string origin, const KnownRuleCheck& known_rule);
// The compiled form: the same schema in JSON, written by profile_to_json.
// Errors name the field (JSON has no lines worth naming: it is one line). A
// key given twice keeps its last value (Boost.JSON); load_profile, which
// `launchguard profile validate` uses, refuses it, as in YAML.
Result<Profile> parse_profile_json_with(std::string_view json, std::string origin, const KnownRuleCheck& known_rule);
// Every setting, defaults included, as one line of JSON.
std::string profile_to_json(const Profile& profile);

// Whether load_compiled_profile (engine/profile_loader.h) can load
// `name_or_path` (a name or a .json path), i.e. whether reading it needs no YAML.
bool is_compiled_profile_reference(std::string_view name_or_path);

}  // namespace launchguard
