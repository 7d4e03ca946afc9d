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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "finding/finding.h"
#include "profile/profile_parameter.h"
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
        bool operator==(const Nccl&) const = default;
    } nccl;

    // The rules' thresholds (cpu.min_idle_states, container.shm_min...): each
    // rule declares its own beside its RuleInfo (profile/profile_parameter.h),
    // so the profile holds them as one table, every default filled in by the
    // readers. The node facts above stay typed: many rules share them.
    ParameterValues parameters;

    std::map<std::string, Action, std::less<>> actions;  // per-rule overrides

    // The action configured for a rule, or fallback when the profile is silent.
    [[nodiscard]] Action action_for(std::string_view rule, Action fallback) const;
    // The value of a parameter, or nullptr where the profile holds none (read
    // it through its descriptor: profile/typed_parameter.h).
    [[nodiscard]] const ParameterValue* parameter(std::string_view key) const;

    // Equal settings; `origin` (where each was read from) is not compared.
    bool operator==(const Profile& other) const;
};

// What the rule registry, a layer above this one, tells the profile readers:
// which rule ids exist under `rules:`, and which parameters the rules read
// (each validated through its descriptor). engine/profile_loader.h binds it
// to the registry; a test may bind it to rules of its own.
using KnownRuleCheck = std::function<bool(const std::string&)>;
struct ProfileRules {
    KnownRuleCheck known_rule{};  // empty: any well-formed id
    std::span<const ProfileParameter* const> parameters{};
};

// Parses YAML text; `origin` names the file in every error.
Result<Profile> parse_profile_with(std::string_view yaml, std::string origin, const ProfileRules& rules);
// The compiled form: the same schema in JSON, written by profile_to_json.
// Errors name the field (JSON has no lines worth naming: it is one line). A
// key given twice keeps its last value (Boost.JSON); load_profile, which
// `launchguard profile validate` uses, refuses it, as in YAML.
Result<Profile> parse_profile_json_with(std::string_view json, std::string origin, const ProfileRules& rules);
// Every setting, defaults included, as one line of JSON.
std::string profile_to_json(const Profile& profile);

// Whether load_compiled_profile (engine/profile_loader.h) can load
// `name_or_path` (a name or a .json path), i.e. whether reading it needs no YAML.
bool is_compiled_profile_reference(std::string_view name_or_path);

}  // namespace launchguard
