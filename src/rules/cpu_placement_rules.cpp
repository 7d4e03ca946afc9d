// CPU placement (field case 2, NUMA): whether the task's CPUs sit on the NUMA
// node of its GPUs, the way NCCL's ncclTopoGetCpuAffinity() will see them.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "rules/families.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"

namespace launchguard {
namespace {

using rules::join;

std::string describe_gpu(const Gpu& gpu) { return "GPU " + std::to_string(gpu.index) + " (" + gpu.busid + ")"; }

std::string describe_gpus(const std::vector<const Gpu*>& gpus) {
    std::vector<std::string> names;
    for (const Gpu* gpu : gpus) names.push_back(describe_gpu(*gpu));
    return join(names);
}

std::string numa_nodes_of(const std::vector<const Gpu*>& gpus) {
    std::vector<std::string> nodes;
    for (const Gpu* gpu : gpus) {
        std::string node = gpu->numa_node >= 0 ? std::to_string(gpu->numa_node) : "unknown";
        bool seen = false;
        for (const auto& n : nodes) seen = seen || n == node;
        if (!seen) nodes.push_back(node);
    }
    return join(nodes);
}

CpuSet local_cpus_of(const std::vector<const Gpu*>& gpus) {
    CpuSet all;
    for (const Gpu* gpu : gpus) all = all.unite(gpu->local_cpus);
    return all;
}

// "on NUMA node 1 (CPUs 8-15,24-31)", or only the CPUs when a GPU's node is unknown.
std::string locality_of(const std::vector<const Gpu*>& gpus) {
    bool nodes_known = true;
    for (const Gpu* gpu : gpus) nodes_known = nodes_known && gpu->numa_node >= 0;
    std::string cpus = local_cpus_of(gpus).to_list();
    return nodes_known ? "on NUMA node " + numa_nodes_of(gpus) + " (CPUs " + cpus + ")" : "with local CPUs " + cpus;
}

std::string describe_mask(const Fact<CpuSet>& mask) {
    std::string text = mask->to_list();
    if (!mask.source().empty()) text += " (" + mask.source() + ")";
    return text;
}

// NCCL_IGNORE_CPU_AFFINITY=1 makes NCCL use the GPU's NUMA mask instead of
// mask AND cpuMask (topo.cc), so the launcher's binding no longer decides
// where NCCL's threads run.
bool nccl_ignores_affinity(const RuleInput& in) {
    const nccl::Setting* setting = in.nccl.get("NCCL_IGNORE_CPU_AFFINITY");
    if (setting == nullptr) return false;
    auto value = rules::effective_int(*setting);
    return value && *value != 0;
}

// The binding that puts a task on its GPU's NUMA node, in the forms a user
// can apply: Slurm flags, then numactl / taskset for other launchers.
std::vector<RemediationOp> binding_remediation(const std::vector<const Gpu*>& gpus) {
    std::vector<RemediationOp> ops;
    CpuSet cpus = local_cpus_of(gpus);
    ops.push_back(RemediationOp::manual_step(
        "Slurm: bind each task to its GPU's NUMA node, e.g. srun --gpus-per-task=1 --gpu-bind=closest "
        "--cpu-bind=ldoms (or --cpu-bind=map_ldom:<node per local rank>); here " +
        describe_gpus(gpus) + " " + locality_of(gpus)));
    bool single_known_node = gpus.size() == 1 && gpus.front()->numa_node >= 0;
    if (single_known_node) {
        std::string node = std::to_string(gpus.front()->numa_node);
        ops.push_back(RemediationOp::manual_step("other launchers: numactl --cpunodebind=" + node + " --membind=" +
                                                 node + " <command>, or mpirun --bind-to numa with one rank per GPU"));
    } else {
        ops.push_back(RemediationOp::manual_step("other launchers: taskset -c " + cpus.to_list() +
                                                 " <command>, or mpirun --bind-to numa with one rank per GPU"));
    }
    return ops;
}

struct GpuPlacement {
    std::vector<const Gpu*> local;        // mask shares CPUs with the GPU's NUMA node
    std::vector<const Gpu*> remote;       // mask has no CPU of the GPU's NUMA node
    std::vector<const Gpu*> no_locality;  // the topology records no CPUs near the GPU
};

GpuPlacement place(const std::vector<Gpu>& gpus, const CpuSet& mask) {
    GpuPlacement placement;
    for (const Gpu& gpu : gpus) {
        if (gpu.local_cpus.empty()) {
            placement.no_locality.push_back(&gpu);
        } else if (mask.intersects(gpu.local_cpus)) {
            placement.local.push_back(&gpu);
        } else {
            placement.remote.push_back(&gpu);
        }
    }
    return placement;
}

// The facts both affinity rules need; false (after reporting why) when they
// cannot decide or have nothing to check.
bool affinity_facts_ready(const RuleInput& in, RuleOutput& out, std::string_view what) {
    if (nccl_ignores_affinity(in)) return false;
    if (rules::setting_or_unknown(in, out, "NCCL_IGNORE_CPU_AFFINITY", what) == nullptr &&
        !in.nccl.decided("NCCL_IGNORE_CPU_AFFINITY")) {
        return false;
    }
    const LaunchContext& ctx = in.ctx;
    if (!ctx.gpus) {
        out.unknown("cannot tell " + std::string(what) + " because the task's GPUs are unknown: " + ctx.gpus.reason());
        return false;
    }
    if (ctx.gpus->empty()) return false;
    if (!ctx.cpu_mask) {
        out.unknown("cannot tell " + std::string(what) +
                    " because the task's CPU mask is unknown: " + ctx.cpu_mask.reason());
        return false;
    }
    return true;
}

std::string no_locality_reason(const std::vector<const Gpu*>& gpus, const NodeTopology* topo) {
    return "the topology" + (topo != nullptr ? " (" + topo->source + ")" : std::string()) +
           " records no CPUs local to " + describe_gpus(gpus) +
           " (no NUMA affinity, as in VMs that report numa_node -1; NCCL then also finds an empty affinity)";
}

void check_affinity_off_gpu(const RuleInput& in, RuleOutput& out) {
    if (!affinity_facts_ready(in, out, "whether the task's CPUs are local to its GPUs")) return;
    const LaunchContext& ctx = in.ctx;
    const CpuSet& mask = *ctx.cpu_mask;
    GpuPlacement placement = place(*ctx.gpus, mask);
    const NodeTopology* topo = ctx.topology ? &ctx.topology.value() : nullptr;

    if (!placement.local.empty()) {
        // A task that sees several GPUs usually drives one of them (chosen by
        // its local rank), so a remote GPU among local ones is not certain.
        if (!placement.remote.empty()) {
            out.unknown("cannot tell which of the task's GPUs NCCL will drive: CPU mask " + mask.to_list() +
                        " is local to " + describe_gpus(placement.local) + " but has no CPU near " +
                        describe_gpus(placement.remote) + "; give each task only its own GPU (--gpus-per-task=1)");
        }
        return;
    }
    if (!placement.no_locality.empty()) {
        out.unknown("cannot tell whether CPU mask " + mask.to_list() + " is local to the task's GPUs because " +
                    no_locality_reason(placement.no_locality, topo));
        return;
    }

    const auto& remote = placement.remote;
    std::string gpu_cpus = local_cpus_of(remote).to_list();
    Finding& finding = out.fire(
        "CPU mask " + mask.to_list() + " shares no CPU with " + describe_gpus(remote) + " " + locality_of(remote) +
        ": NCCL finds an empty affinity, says so only at INFO level, and leaves its threads on the remote node");
    finding.evidence.emplace_back("cpu_mask", describe_mask(ctx.cpu_mask));
    finding.evidence.emplace_back("gpus", describe_gpus(remote));
    finding.evidence.emplace_back("gpus_source", ctx.gpus.source());
    finding.evidence.emplace_back("gpu_numa_nodes", numa_nodes_of(remote));
    finding.evidence.emplace_back("gpu_local_cpus", gpu_cpus);
    if (const nccl::Setting* setting = in.nccl.get("NCCL_IGNORE_CPU_AFFINITY")) {
        rules::add_setting_evidence(finding, *setting);
    } else {
        finding.evidence.emplace_back("NCCL_IGNORE_CPU_AFFINITY",
                                      "unset (NCCL intersects the task mask with the GPU's)");
    }
    if (topo != nullptr) finding.evidence.emplace_back("topology", topo->source);
    finding.remediation = binding_remediation(remote);
}

// NUMA nodes whose CPUs the mask uses although none of `gpu_cpus` is on them.
std::vector<const NumaNode*> remote_numa_nodes(const NodeTopology& topo, const CpuSet& mask, const CpuSet& gpu_cpus) {
    std::vector<const NumaNode*> remote;
    for (const auto& node : topo.numa_nodes) {
        if (node.cpus.intersects(mask) && !node.cpus.intersects(gpu_cpus)) remote.push_back(&node);
    }
    return remote;
}

std::string percent(std::size_t part, std::size_t whole) {
    return std::to_string(whole == 0 ? 0 : (part * 100 + whole / 2) / whole) + "%";
}

constexpr NumberParameter kMinAffinityOverlap{"cpu.min_affinity_overlap", 0.5, 0, 1,
                                              "fire when a smaller share of the task's CPUs is local to its GPUs"};
constexpr auto kAffinityPartialParameters = parameter_list(kMinAffinityOverlap);

void check_affinity_partial(const RuleInput& in, RuleOutput& out) {
    if (!affinity_facts_ready(in, out, "how much of the task's CPU mask is local to its GPUs")) return;
    const LaunchContext& ctx = in.ctx;
    const CpuSet& mask = *ctx.cpu_mask;
    GpuPlacement placement = place(*ctx.gpus, mask);
    const NodeTopology* topo = ctx.topology ? &ctx.topology.value() : nullptr;
    if (!placement.no_locality.empty()) {
        out.unknown("cannot tell how much of CPU mask " + mask.to_list() + " is local to the task's GPUs because " +
                    no_locality_reason(placement.no_locality, topo));
        return;
    }
    std::vector<const Gpu*> gpus;
    for (const Gpu& gpu : *ctx.gpus) gpus.push_back(&gpu);
    CpuSet gpu_cpus = local_cpus_of(gpus);
    CpuSet overlap = mask.intersect(gpu_cpus);
    if (overlap.empty()) return;  // cpu.affinity-off-gpu's case

    double fraction = static_cast<double>(overlap.count()) / static_cast<double>(mask.count());
    const double min_overlap = kMinAffinityOverlap.in(in.profile);
    bool small_overlap = fraction < min_overlap;
    std::vector<const NumaNode*> remote;
    if (topo != nullptr) remote = remote_numa_nodes(*topo, mask, gpu_cpus);
    if (!small_overlap && remote.empty()) return;

    std::string overlap_text = overlap.to_list() + " (" + std::to_string(overlap.count()) + " of " +
                               std::to_string(mask.count()) + " CPUs, " + percent(overlap.count(), mask.count()) + ")";
    std::vector<std::string> remote_names;
    CpuSet remote_cpus;
    for (const NumaNode* node : remote) {
        remote_names.push_back(std::to_string(node->os_index));
        remote_cpus = remote_cpus.unite(node->cpus.intersect(mask));
    }
    std::string message = "CPU mask " + mask.to_list() + " is only partly local to " + describe_gpus(gpus) + ": ";
    if (!remote.empty()) {
        message += std::to_string(remote_cpus.count()) + " of its " + std::to_string(mask.count()) +
                   " CPUs are on NUMA node " + join(remote_names) + ", where none of its GPUs is";
    } else {
        message += "only " + percent(overlap.count(), mask.count()) + " of its CPUs are near its GPUs";
    }
    message += "; threads scheduled there reach the GPU and its buffers across the CPU interconnect";
    Finding& finding = out.fire(std::move(message));
    finding.evidence.emplace_back("cpu_mask", describe_mask(ctx.cpu_mask));
    finding.evidence.emplace_back("gpus", describe_gpus(gpus));
    finding.evidence.emplace_back("gpu_local_cpus", gpu_cpus.to_list());
    finding.evidence.emplace_back("local_overlap", overlap_text);
    finding.evidence.emplace_back("min_affinity_overlap",
                                  rules::format_number(min_overlap) + " (profile " + in.profile.name + ")");
    if (!remote.empty()) {
        finding.evidence.emplace_back("remote_numa_nodes",
                                      join(remote_names) + " (CPUs " + remote_cpus.to_list() + ")");
    }
    finding.remediation = binding_remediation(gpus);
}

// How a Slurm binding string (SLURM_CPU_BIND "quiet,map_cpu:0,1") places
// tasks. slurmd rewrites topology-aware bindings (cores, sockets, ldoms) and
// its default binding into per-task masks before the task starts
// (task/affinity lllp_distribution). Depending on the version a unit stays in
// front ("quiet,ldoms,mask_cpu:0x..") or not: 22.05.8 writes the default and
// --cpu-bind=cores as "quiet,mask_cpu:0x1,0x2" (observed in
// tests/integration/slurm), indistinguishable from a user's own mask list.
struct SlurmBinding {
    std::string type;               // "map_cpu", "mask_cpu", "rank", "map_ldom", "none", ...
    std::vector<std::string> list;  // CPU ids or masks after "map_cpu:" / "mask_cpu:"
};

std::vector<std::string> split_commas(std::string_view text) {
    std::vector<std::string> items;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t comma = std::min(text.find(',', pos), text.size());
        if (comma > pos) items.emplace_back(text.substr(pos, comma - pos));
        pos = comma + 1;
    }
    return items;
}

SlurmBinding parse_slurm_binding(std::string_view text) {
    SlurmBinding binding;
    bool in_list = false;
    for (const std::string& token : split_commas(text)) {
        if (in_list) {
            binding.list.push_back(token);
        } else if (token == "threads" || token == "cores" || token == "sockets" || token == "ldoms" ||
                   token == "boards") {
            continue;  // the topology unit Slurm bound by; not the binding type
        } else if (std::size_t colon = token.find(':'); colon != std::string::npos) {
            binding.type = token.substr(0, colon);
            if (colon + 1 < token.size()) binding.list.push_back(token.substr(colon + 1));
            in_list = true;
        } else if (token != "quiet" && token != "verbose" && token != "v" && token != "q") {
            binding.type = token;
        }
    }
    return binding;
}

// Why a binding is by CPU id rather than by topology; empty when it is not.
// `as_requested`: the binding the user wrote, not slurmd's rewrite of it.
std::string by_id_reason(const SlurmBinding& binding, bool as_requested) {
    if (binding.type == "map_cpu") return "map_cpu pins local task N to the N-th listed CPU id";
    if (binding.type == "rank") return "rank pins local task N to CPU id N";
    // In a task's environment mask_cpu is left alone: Slurm writes its own
    // topology-aware bindings in that form too, so a warning would fire on
    // every default srun. Written by the user, it is a list of CPU ids.
    if (binding.type == "mask_cpu" && as_requested) return "mask_cpu pins local task N to the N-th listed CPU mask";
    return {};
}

void check_bind_by_id(const RuleInput& in, RuleOutput& out) {
    const LaunchContext& ctx = in.ctx;
    if (!ctx.env) {
        out.unknown("cannot tell how Slurm binds the task's CPUs because the task environment is unknown: " +
                    ctx.env.reason());
        return;
    }
    const Environment& env = *ctx.env;
    std::string variable;
    std::string value;
    SlurmBinding binding;
    if (ctx.requested_cpu_bind) {
        variable = "--cpu-bind";
        value = ctx.requested_cpu_bind.value();
        binding = parse_slurm_binding(value);
    } else if (auto it = env.find("SLURM_CPU_BIND"); it != env.end()) {
        variable = "SLURM_CPU_BIND";
        binding = parse_slurm_binding(it->second);
    } else if (auto type = env.find("SLURM_CPU_BIND_TYPE"); type != env.end()) {
        variable = "SLURM_CPU_BIND_TYPE";
        binding = parse_slurm_binding(type->second);
        if (auto list = env.find("SLURM_CPU_BIND_LIST"); list != env.end()) {
            binding.list = split_commas(list->second);
        }
    } else {
        return;  // no Slurm CPU binding in effect
    }
    std::string reason = by_id_reason(binding, ctx.requested_cpu_bind.is_known());
    if (reason.empty()) return;

    if (value.empty()) value = env.find(variable)->second;
    Finding& finding = out.fire(variable + "=" + value + " binds tasks to CPUs by id, not by GPU locality (" + reason +
                                "): the placement is right only while CPU numbering and GPU order happen to line up");
    finding.evidence.emplace_back(variable, value);
    if (ctx.requested_cpu_bind) finding.evidence.emplace_back("requested_in", ctx.requested_cpu_bind.source());
    finding.evidence.emplace_back("binding",
                                  binding.type + (binding.list.empty() ? "" : ":" + join(binding.list, ",")));
    if (ctx.cpu_mask) finding.evidence.emplace_back("cpu_mask", describe_mask(ctx.cpu_mask));
    if (ctx.gpus && !ctx.gpus->empty()) {
        std::vector<const Gpu*> gpus;
        for (const Gpu& gpu : *ctx.gpus) gpus.push_back(&gpu);
        finding.evidence.emplace_back("gpus", describe_gpus(gpus));
        finding.evidence.emplace_back("gpu_local_cpus", local_cpus_of(gpus).to_list());
    }
    finding.remediation.push_back(RemediationOp::manual_step(
        "bind by topology instead: srun --gpus-per-task=1 --gpu-bind=closest --cpu-bind=ldoms, or "
        "--cpu-bind=map_ldom:<NUMA node per local rank> / mask_ldom when tasks need a fixed NUMA order"));
}

// At most this many containers are named in the finding: each GPU container
// of a pod gets the finding, so listing all of a pod's n containers in each
// would make the report grow with n squared.
constexpr std::size_t kListedBreakers = 8;

void check_k8s_not_pinnable(const RuleInput& in, RuleOutput& out) {
    const auto& pod = in.ctx.pod_resources;
    if (!pod || *pod == nullptr) {
        out.unknown(
            "cannot tell whether the pod can get exclusive CPUs: needs the Pod spec (QoS class, CPU requests "
            "and limits of every container), which the Kubernetes admission webhook and `launchguard review` "
            "read");
        return;
    }
    const std::vector<std::string>& all_breakers = (*pod)->qos_breakers;
    std::vector<std::string> breakers(
        all_breakers.begin(),
        all_breakers.begin() + static_cast<std::ptrdiff_t>(std::min(all_breakers.size(), kListedBreakers)));
    if (all_breakers.size() > breakers.size()) {
        breakers.push_back("and " + std::to_string(all_breakers.size() - breakers.size()) + " more containers");
    }
    std::vector<std::string> fractional;
    if (in.ctx.pod_judged_container < (*pod)->containers.size()) {
        const ContainerResources& c = (*pod)->containers[in.ctx.pod_judged_container];
        std::optional<std::int64_t> cpus = c.cpu_request_milli ? c.cpu_request_milli : c.cpu_limit_milli;
        if (cpus && *cpus % 1000 != 0) fractional.push_back(c.name + ": " + std::to_string(*cpus) + "m CPU");
    }
    if (breakers.empty() && fractional.empty()) return;
    // Under the kubelet's default policy (none) no pod gets exclusive CPUs:
    // then the spec cannot change where its threads run.
    const auto& policy = in.profile.node.cpu_manager_policy;
    if (policy && *policy == "none") return;
    std::string why = !breakers.empty() ? "the pod is not in the Guaranteed QoS class (" + join(breakers, "; ") + ")"
                                        : "it requests a fractional number of CPUs (" + join(fractional, "; ") + ")";
    std::string message = "the GPU pod cannot get exclusive CPUs from the kubelet's CPU Manager because " + why +
                          ": its threads float over the node's shared CPU pool, on any NUMA node";
    if (!policy) {
        message += " (this matters only where the node's kubelet runs the static CPU Manager policy, which profile " +
                   in.profile.name + " does not state: node.cpu_manager_policy)";
    }
    Finding& finding = out.fire(std::move(message));
    // Most clusters run the kubelet's default policy (none), where no pod gets
    // exclusive CPUs: without the profile's word this is information.
    if (!policy) finding.severity = Severity::info;
    finding.evidence.emplace_back("cpu_manager_policy", policy ? *policy + " (profile " + in.profile.name + ")"
                                                               : "not stated by profile " + in.profile.name);
    finding.evidence.emplace_back("qos_class", breakers.empty() ? "Guaranteed" : "not Guaranteed");
    for (const auto& b : breakers) finding.evidence.emplace_back("breaks_guaranteed", b);
    for (const auto& f : fractional) finding.evidence.emplace_back("fractional_cpus", f);
    finding.remediation.push_back(RemediationOp::manual_step(
        "give every container (sidecars and init containers included) equal integer CPU and equal memory requests "
        "and limits"));
}

const TableRule kAffinityOffGpu{
    RuleInfo{
        .id = "cpu.affinity-off-gpu",
        .title = "Task CPUs are all on another NUMA node than its GPU",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeCli,
        .checks = "Intersects the task's CPU mask (sched_getaffinity, as Slurm --cpu-bind, cgroup cpusets, numactl, "
                  "taskset or the MPI launcher left it) with the CPUs local to each GPU assigned to the task. Fires "
                  "when no CPU of the mask is on the NUMA node of the task's GPU(s). When the task sees several GPUs "
                  "and the mask is local to some of them, the rule cannot tell which GPU the task drives and says so. "
                  "Quiet when NCCL_IGNORE_CPU_AFFINITY is non-zero: NCCL then uses the GPU's NUMA mask itself.",
        .why = "NCCL's ncclTopoGetCpuAffinity() computes the task mask AND the GPU's NUMA mask and binds its "
               "proxy and init threads to the result. When that intersection is empty it logs only INFO \"Affinity "
               "for GPU N is empty, ignoring\" (invisible with NCCL_DEBUG unset) and keeps the wrong placement: "
               "every network transfer, kernel launch and host staging copy then crosses the CPU interconnect. "
               "Wrong NUMA placement was part of field case 2 (H100 nodes below expected throughput).",
        .evidence = "The task's CPU mask and where it came from, the GPUs (index and PCI bus id) with their NUMA "
                    "node and local CPUs, how the GPUs were assigned (SLURM_STEP_GPUS, CUDA_VISIBLE_DEVICES, ...), "
                    "and the topology source.",
        .fix = "Bind each task to its GPU's NUMA node: srun --gpus-per-task=1 --gpu-bind=closest --cpu-bind=ldoms "
               "(or --cpu-bind=map_ldom:...), numactl --cpunodebind=N --membind=N, or mpirun --bind-to numa with one "
               "rank per GPU. The finding names the NUMA node and its CPU list.",
    },
    check_affinity_off_gpu};

const TableRule kAffinityPartial{
    RuleInfo{
        .id = "cpu.affinity-partial",
        .title = "Task CPUs are only partly local to its GPU",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeCli,
        .checks = "With a non-empty overlap between the task's CPU mask and its GPUs' local CPUs, fires when the "
                  "overlap is below the profile's cpu.min_affinity_overlap fraction of the mask (default 0.5), or "
                  "when the mask includes CPUs of a NUMA node that none of the task's GPUs is attached to (an "
                  "unbound task on a two-socket node, for example). Quiet when NCCL_IGNORE_CPU_AFFINITY is non-zero.",
        .why = "NCCL narrows its own threads to the overlap, but the application's threads (the training loop "
               "that launches kernels, data loader workers) still run anywhere in the mask; those on the remote "
               "node reach the GPU, the NIC and first-touch host memory across the CPU interconnect. A small "
               "overlap also squeezes NCCL's proxy threads onto a few CPUs.",
        .evidence = "The CPU mask, the GPUs and their local CPUs, the overlap (CPUs, count and share of the mask), "
                    "the profile's minimum and the remote NUMA nodes with the mask's CPUs on them.",
        .fix = "Bind each task to its GPU's NUMA node as for cpu.affinity-off-gpu: srun --gpu-bind=closest "
               "--cpu-bind=ldoms, numactl --cpunodebind=N --membind=N, or mpirun --bind-to numa.",
        .parameters = kAffinityPartialParameters,
    },
    check_affinity_partial};

const TableRule kBindById{
    RuleInfo{
        .id = "cpu.bind-by-id",
        .title = "Slurm binds tasks to CPU ids rather than by topology",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeCli,
        .checks = "Reads SLURM_CPU_BIND (else SLURM_CPU_BIND_TYPE and SLURM_CPU_BIND_LIST) and fires for map_cpu and "
                  "rank. Slurm turns its default and topology-aware bindings (cores, sockets, ldoms) into per-task "
                  "masks before the task starts and writes them as mask_cpu (22.05 without the unit in front), so "
                  "mask_cpu stays quiet there: it cannot be told apart from a user's own mask list. Where the "
                  "launch's spec shows the --cpu-bind the user wrote (`launchguard review` of a batch script), "
                  "that is judged instead, and mask_cpu fires too. map_ldom, mask_ldom and rank_ldom are by "
                  "topology and stay quiet.",
        .why = "A CPU-id list is correct for one node layout and one GPU order only. On another SKU, after a BIOS "
               "change of the CPU numbering (SMT sibling order) or with a different GPU assignment, the same list "
               "silently puts tasks on the wrong NUMA node; NCCL does not correct it (see cpu.affinity-off-gpu).",
        .evidence = "The Slurm variable (or the spec's --cpu-bind and where it is written) and its value, the "
                    "parsed binding, and the task's CPU mask and GPUs with their local CPUs when known.",
        .fix = "Bind by topology: srun --gpus-per-task=1 --gpu-bind=closest --cpu-bind=ldoms, or "
               "--cpu-bind=map_ldom:<NUMA node per local rank> when tasks need a fixed order.",
    },
    check_bind_by_id};

const TableRule kK8sNotPinnable{
    RuleInfo{
        .id = "cpu.k8s-not-pinnable",
        .title = "GPU pod cannot get exclusive CPUs",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeKubernetes,
        .checks = "Kubernetes only: a GPU pod gets exclusive CPUs from the kubelet's static CPU Manager (and NUMA "
                  "alignment from the Topology Manager) only when it is in the Guaranteed QoS class (every "
                  "container, init and sidecar containers included, has CPU and memory requests equal to limits) "
                  "and requests an integer number of CPUs. Judged against the profile's node.cpu_manager_policy: "
                  "quiet under none (no pod gets exclusive CPUs there, whatever its spec), a warning under static, "
                  "and information (severity info) where the profile does not say, since most clusters run the "
                  "kubelet's default policy, none.",
        .why = "Otherwise the pod's threads float over the node's shared CPU pool, on any NUMA node, whatever the "
               "GPU's locality. A sidecar injected without resources (a service mesh proxy, a TCPXO daemon with "
               "resources: {}) silently demotes the pod to Burstable.",
        .evidence = "The pod's QoS class, the containers whose requests and limits break Guaranteed, and the "
                    "judged container's fractional CPU request. Outside Kubernetes the rule cannot decide.",
        .fix = "Give every container equal integer CPU and memory requests and limits (sidecars included) so the "
               "pod is Guaranteed; run the kubelet with --cpu-manager-policy=static and a Topology Manager policy "
               "such as single-numa-node or restricted.",
    },
    check_k8s_not_pinnable};

}  // namespace

void register_cpu_placement_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kAffinityOffGpu);
    rules.push_back(&kAffinityPartial);
    rules.push_back(&kBindById);
    rules.push_back(&kK8sNotPinnable);
}

}  // namespace launchguard
