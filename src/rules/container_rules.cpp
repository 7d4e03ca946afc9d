// Container resources NCCL depends on: /dev/shm size and the locked-memory
// limit that RDMA registration needs.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "rules/families.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"
#include "util/size_parser.h"

namespace launchguard {
namespace {

using rules::join;

// Where NCCL keeps its shared-memory buffers. NCCL's
// ncclShmAllocateShareableBuffer (src/transport/shm.cc) takes cuMem host
// memory instead of a /dev/shm/nccl-* file when ncclCuMemEnable() and
// ncclCuMemHostEnable() (src/misc/cudawrap.cc) both hold. The latter reads
// NCCL_CUMEM_HOST_ENABLE, added in 2.23 with a default of 0; from 2.24 its
// default -1 means "on when the CUDA driver is 12.6 or later" (12.2 at
// least in any case). Only its proxy-ops pool and a few small NVLS segments
// stay in /dev/shm.
constexpr nccl::Version kCuMemHostSetting{2, 23, 0};
constexpr nccl::Version kCuMemHostByDefault{2, 24, 0};
// CUDA 12.6 came with the R560 driver (CUDA Toolkit release notes, "CUDA
// Toolkit and Corresponding Driver Versions": 12.6 GA needs >= 560.28.03).
// 12.2, which any cuMem host allocation needs, with R535 (>= 535.54.03).
constexpr long kCuda126Driver = 560;
constexpr long kCuda122Driver = 535;

// The major number of the kernel module's version in the first line of
// /proc/driver/nvidia/version ("... Kernel Module  565.57.01  ..."), or -1. A forward-compatible libcuda in the image
// can report a newer CUDA than this; then the rule still speaks of the host's driver, as NCCL's check would not.
long driver_major(const std::string& line) {
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (!std::isdigit(static_cast<unsigned char>(line[i])) || (i > 0 && line[i - 1] != ' ')) continue;
        std::size_t end = i;
        while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
        if (end == line.size() || line[end] != '.' || end - i < 3 || end - i > 4) continue;
        long major = 0;
        std::from_chars(line.data() + i, line.data() + end, major);
        return major;
    }
    return -1;
}

// Whether the image's NCCL keeps its shared-memory transport buffers out of
// /dev/shm: a description of why when it does, "" when it does not, and the
// version evidence in `nccl` either way.
std::string cumem_host_buffers(const RuleInput& in, std::string& nccl) {
    std::string where;
    auto version = rules::image_nccl_version(in, where);
    nccl = version ? "NCCL " + version->to_string() + " (" + where + ")" : "unknown (" + where + ")";
    if (!version || *version < kCuMemHostSetting) return "";
    // NCCL_CUMEM_ENABLE=0 (or any negative but -2) keeps every buffer on /dev/shm.
    if (const nccl::Setting* cumem = in.nccl.get("NCCL_CUMEM_ENABLE")) {
        auto value = rules::effective_int(*cumem);
        if (value && *value <= 0 && *value != -2) return "";
    }
    const auto& gdr = in.ctx.node.gpudirect;
    const long major = gdr && gdr->nvidia_driver ? driver_major(*gdr->nvidia_driver) : -1;
    if (const nccl::Setting* host = in.nccl.get("NCCL_CUMEM_HOST_ENABLE")) {
        auto value = rules::effective_int(*host);
        if (value && *value != -1) {
            if (*value == 0 || (major >= 0 && major < kCuda122Driver)) return "";
            return "NCCL_CUMEM_HOST_ENABLE=" + host->value + " (" + host->origin + ") with NCCL " +
                   version->to_string();
        }
    }
    if (*version < kCuMemHostByDefault) return "";
    if (major < kCuda126Driver) return "";
    return "NCCL " + version->to_string() + " with driver " + std::to_string(major) + " (CUDA 12.6 or later)";
}

constexpr ByteSizeParameter kShmMin{"container.shm_min", 1ULL << 30, "fire when /dev/shm is smaller"};
constexpr auto kShmSmallParameters = parameter_list(kShmMin);

void check_shm_small(const RuleInput& in, RuleOutput& out) {
    const std::uint64_t minimum = kShmMin.in(in.profile);
    if (minimum == 0) return;
    const auto& shm = in.ctx.container.shm_bytes;
    if (!shm) {
        out.unknown("cannot tell whether /dev/shm holds NCCL's shared buffers because its size is unknown: " +
                    shm.reason());
        return;
    }
    if (*shm >= minimum) return;
    // Only now the image's NCCL is looked up: a launch with room enough pays nothing.
    std::string nccl;
    const std::string cumem = cumem_host_buffers(in, nccl);
    if (!cumem.empty()) {
        out.unknown("does not apply: " + cumem +
                    " keeps its shared-memory transport buffers in cuMem host memory, not in /dev/shm (" +
                    format_byte_size(*shm) + "); only its small proxy-ops pool is there");
        return;
    }
    Finding& finding = out.fire("/dev/shm is " + format_byte_size(*shm) + ", below the " + format_byte_size(minimum) +
                                " minimum of profile " + in.profile.name +
                                ": NCCL's proxy and shared-memory buffers (and data loader workers) live there, and "
                                "NCCL init fails with \"failed to extend /dev/shm/nccl-*\" once it is full");
    finding.evidence.emplace_back("shm_size",
                                  format_byte_size(*shm) + (shm.source().empty() ? "" : " (" + shm.source() + ")"));
    finding.evidence.emplace_back("minimum", format_byte_size(minimum) + " (profile " + in.profile.name + ")");
    finding.evidence.emplace_back("runtime", std::string(to_string(in.ctx.runtime)));
    finding.evidence.emplace_back("nccl_version", nccl);
    finding.remediation.push_back(RemediationOp::shm(minimum));
}

bool has_ipc_lock(const std::vector<std::string>& capabilities) {
    return std::any_of(capabilities.begin(), capabilities.end(),
                       [](const std::string& cap) { return cap == "CAP_IPC_LOCK" || cap == "IPC_LOCK"; });
}

// Whether NCCL will register memory with an RDMA device: a description of
// the evidence when it will, "" when it will not, nullopt when unknown.
std::optional<std::string> rdma_use(const RuleInput& in) {
    // PyTorch's gloo backend talks over TCP: it registers no memory.
    if (in.ctx.comm_backend && *in.ctx.comm_backend == CommBackend::gloo) return std::string();
    if (const nccl::Setting* disable = in.nccl.get("NCCL_IB_DISABLE")) {
        auto value = rules::effective_int(*disable);
        if (value && *value != 0) return std::string();
    }
    const auto& topo = in.ctx.topology;
    if (topo) {
        std::vector<std::string> ports;
        for (const Nic& nic : topo->nics) {
            for (const IbPort& port : nic.ports) {
                if (port.state == "ACTIVE") ports.push_back(nic.hca + ":" + std::to_string(port.number));
            }
        }
        if (ports.empty()) return std::string();
        return std::to_string(ports.size()) + " ACTIVE IB/RoCE port" + (ports.size() == 1 ? "" : "s") + " (" +
               join(ports) + ")";
    }
    const Profile::Node& node = in.profile.node;
    if (node.rdma_nics.value_or(0) > 0) {
        return "profile " + in.profile.name + " expects " + std::to_string(*node.rdma_nics) + " RDMA NICs";
    }
    if (node.active_ib_ports.value_or(0) > 0) {
        return "profile " + in.profile.name + " expects " + std::to_string(*node.active_ib_ports) + " ACTIVE IB ports";
    }
    const auto& devices = in.ctx.container.rdma_devices;
    if (devices && !devices->empty()) return "the container is given RDMA devices " + join(*devices);
    return std::nullopt;
}

constexpr BoolParameter kMemlockUnlimited{"container.memlock_unlimited", true,
                                          "false keeps the rule quiet: the class needs no unlimited memlock"};
constexpr auto kMemlockParameters = parameter_list(kMemlockUnlimited);

void check_memlock(const RuleInput& in, RuleOutput& out) {
    if (!kMemlockUnlimited.in(in.profile)) return;
    const ContainerFacts& container = in.ctx.container;
    if (container.memlock && !container.memlock->has_value()) return;  // unlimited

    // CAP_IPC_LOCK lifts RLIMIT_MEMLOCK for memory registration, but only
    // for root: a non-root container keeps it in the bounding set only.
    bool root_known_false = container.runs_as_root && !*container.runs_as_root;
    bool ipc_lock = container.capabilities && has_ipc_lock(*container.capabilities);
    if (ipc_lock && !root_known_false) return;

    auto rdma = rdma_use(in);
    if (!rdma) {
        out.unknown("cannot tell whether the job registers memory for RDMA because the node topology is unknown (" +
                    in.ctx.topology.reason() + ") and profile " + in.profile.name + " names no RDMA NICs");
        return;
    }
    if (rdma->empty()) return;
    // A pod spec cannot raise RLIMIT_MEMLOCK: without an effective IPC_LOCK
    // the container runtime's limit applies, unlimited only where the node's
    // runtime unit was changed for RDMA.
    const bool kubernetes = in.ctx.runtime == Runtime::kubernetes;
    if (!container.memlock && !kubernetes) {
        out.unknown("cannot tell whether RDMA can pin NCCL's buffers because RLIMIT_MEMLOCK is unknown: " +
                    container.memlock.reason());
        return;
    }
    // A pod's limit is the node's container runtime's: the profile may say what it is.
    Fact<std::optional<std::uint64_t>> limit = container.memlock;
    const auto& runtime_memlock = in.profile.node.runtime_memlock;
    if (!limit && runtime_memlock) {
        limit = Fact<std::optional<std::uint64_t>>::known(
            *runtime_memlock, "profile " + in.profile.name + ": node.runtime_memlock, the container runtime's");
    }
    if (limit && !limit->has_value()) return;  // unlimited

    std::string limit_text =
        limit ? format_byte_size(**limit) : "the container runtime's limit (a pod spec cannot raise it)";
    std::string message =
        limit ? "RLIMIT_MEMLOCK is " + limit_text + ", not unlimited, while the job uses RDMA (" + *rdma + ")"
              : "the container has no effective IPC_LOCK while the job uses RDMA (" + *rdma +
                    "), so RLIMIT_MEMLOCK stays the container runtime's, unlimited only where the node's runtime "
                    "was configured for it (profile " +
                    in.profile.name + " does not state it: node.runtime_memlock)";
    if (root_known_false) {
        // The trap: a capability lifts the limit for root only (ib_umem_get
        // checks can_do_mlock: CAP_IPC_LOCK or the rlimit), and a non-root
        // process's capabilities are not effective.
        message += std::string(ipc_lock ? " and the container's IPC_LOCK" : "; adding IPC_LOCK") +
                   " does not raise it for a non-root process: only the runtime's or the node's limit can";
    }
    message +=
        ": NCCL cannot pin its network buffers with ibv_reg_mr, which ends in a fallback to TCP sockets or a "
        "failed init";
    Finding& finding = out.fire(std::move(message));
    // GPU node images and operators commonly run the runtime with an
    // unlimited limit for RDMA: without the profile's word, information.
    if (!limit) finding.severity = Severity::info;
    finding.evidence.emplace_back("memlock", limit_text + (limit.source().empty() ? "" : " (" + limit.source() + ")"));
    finding.evidence.emplace_back("rdma", *rdma);
    if (container.capabilities) {
        finding.evidence.emplace_back("capabilities",
                                      container.capabilities->empty() ? "none" : join(*container.capabilities));
    }
    if (container.runs_as_root) finding.evidence.emplace_back("runs_as_root", *container.runs_as_root ? "yes" : "no");
    if (!root_known_false) finding.remediation.push_back(RemediationOp::capability("IPC_LOCK"));
    if (root_known_false)
        finding.evidence.emplace_back("non_root", "a capability does not raise RLIMIT_MEMLOCK for a non-root process");
    finding.remediation.push_back(RemediationOp::manual_step(
        "raise the limit to unlimited where the job's processes inherit it: docker/podman --ulimit memlock=-1; "
        "Slurm: LimitMEMLOCK=infinity for slurmd and PropagateResourceLimitsExcept=MEMLOCK in slurm.conf; "
        "Kubernetes: LimitMEMLOCK=infinity in the container runtime's systemd unit (containerd drop-in)"));
}

const TableRule kShmSmall{
    RuleInfo{
        .id = "shm.small",
        .title = "/dev/shm smaller than the profile minimum",
        .default_action = Action::patch,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "Compares the size of /dev/shm as the task sees it with the profile's container.shm_min "
                  "(default 1 GiB). In Kubernetes the size comes from the Pod spec: a memory emptyDir, a hostPath "
                  "or hostIPC at /dev/shm. Does not apply (an unknown that says so) when the image's NCCL keeps "
                  "its shared-memory buffers in cuMem host memory: NCCL 2.24 or later on a node whose NVIDIA "
                  "driver is R560 (CUDA 12.6) or later, or NCCL 2.23 or later with NCCL_CUMEM_HOST_ENABLE=1; not "
                  "when NCCL_CUMEM_ENABLE or NCCL_CUMEM_HOST_ENABLE is 0. An older, unversioned or absent NCCL, "
                  "or an unknown driver, keeps the rule firing.",
        .why = "NCCL always keeps its proxy-ops pool in /dev/shm, and its shared-memory transport buffers too when "
               "cuMem host allocations are unavailable; PyTorch data loader workers pass batches through it. "
               "Docker and Kubernetes give 64 MiB by default. When it runs out NCCL fails init with \"failed to "
               "extend /dev/shm/nccl-* to N bytes\", often only at scale after the job has started. enroot "
               "bind-mounts the host's /dev/shm, so there the host's size applies.",
        .evidence = "The size of /dev/shm and where it was read, the profile minimum, the runtime, and the image's "
                    "NCCL version and where it was found.",
        .fix = "Patched where the front end can: docker --shm-size=1g, a Kubernetes emptyDir {medium: Memory, "
               "sizeLimit: 1Gi} mounted at /dev/shm; for enroot, a larger /dev/shm on the host.",
        .parameters = kShmSmallParameters,
    },
    check_shm_small};

const TableRule kMemlock{
    RuleInfo{
        .id = "mem.memlock",
        .title = "Locked-memory limit too low for RDMA",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .checks = "Where NCCL will use RDMA (ACTIVE IB/RoCE ports in the topology, else RDMA NICs in the profile; "
                  "not when NCCL_IB_DISABLE is set), fires when RLIMIT_MEMLOCK is not unlimited and the container "
                  "has no effective CAP_IPC_LOCK. IPC_LOCK counts only for root containers: Kubernetes puts it in "
                  "the bounding set of non-root ones, where it has no effect. Quiet when the profile sets "
                  "container.memlock_unlimited: false, and for the gloo backend (TCP). In Kubernetes, where a pod "
                  "cannot see or set its limit, the profile's node.runtime_memlock stands for it: quiet when "
                  "unlimited, a warning for a size, and information (severity info) when the profile does not say.",
        .why = "RDMA registration (ibv_reg_mr) pins NCCL's buffers and is charged against RLIMIT_MEMLOCK unless the "
               "process holds CAP_IPC_LOCK. Containers inherit the runtime daemon's limit (8 MiB on kernels 5.16 "
               "and later, 64 KiB before; containerd's unit does not raise it) and Slurm propagates the submit "
               "shell's limit; registration then fails and NCCL falls back to TCP sockets or fails init "
               "(NVIDIA/nvidia-container-toolkit#2037).",
        .evidence = "The limit and where it was read, why RDMA is expected, the container's capabilities and "
                    "whether it runs as root.",
        .fix = "Add IPC_LOCK for root containers; otherwise raise the limit: docker --ulimit memlock=-1, "
               "LimitMEMLOCK=infinity for slurmd with PropagateResourceLimitsExcept=MEMLOCK in slurm.conf, or "
               "LimitMEMLOCK=infinity in the container runtime's systemd unit.",
        .parameters = kMemlockParameters,
    },
    check_memlock};

// ---------------------------------------------------------------------------
// mem.nofile-low

constexpr IntegerParameter<std::uint64_t> kOpenFilesMin{"container.open_files_min", 65536, 0, 1ULL << 40,
                                                        "soft RLIMIT_NOFILE floor (0: the rule stays quiet)"};
constexpr IntegerParameter<int> kOpenFilesMinJobGpus{
    "container.open_files_min_job_gpus", 64, 0, 1 << 24,
    "apply the floor to jobs of at least this many GPUs (0: every job)"};
constexpr auto kNofileLowParameters = parameter_list(kOpenFilesMin, kOpenFilesMinJobGpus);

void check_nofile_low(const RuleInput& in, RuleOutput& out) {
    const std::uint64_t minimum = kOpenFilesMin.in(in.profile);
    if (minimum == 0) return;
    const int min_gpus = kOpenFilesMinJobGpus.in(in.profile);
    const auto& gpus = in.ctx.job.total_gpus;
    const auto& limit = in.ctx.container.open_files;
    if (limit && !limit->has_value()) return;  // unlimited
    if (limit && **limit >= minimum) return;
    if (min_gpus > 0) {
        if (!gpus) {
            out.unknown(
                "cannot tell whether the open-files limit is enough for the job because its GPU count is "
                "unknown: " +
                gpus.reason());
            return;
        }
        if (*gpus < min_gpus) return;
    }
    if (!limit) {
        out.unknown(
            "cannot tell whether the open-files limit is enough for the job because RLIMIT_NOFILE is "
            "unknown: " +
            limit.reason());
        return;
    }
    std::string size = gpus ? std::to_string(*gpus) + "-GPU job" : "job";
    Finding& finding = out.fire("RLIMIT_NOFILE is " + std::to_string(**limit) + ", below the " +
                                std::to_string(minimum) + " profile " + in.profile.name + " asks for a " + size +
                                ": NCCL's bootstrap and proxy sockets, IPC handles and data loader workers each "
                                "take descriptors, and init fails with \"Too many open files\" at scale");
    finding.evidence.emplace_back("open_files", std::to_string(**limit) + " (" + limit.source() + ")");
    finding.evidence.emplace_back("minimum",
                                  std::to_string(minimum) + " (profile " + in.profile.name +
                                      (min_gpus > 0 ? ", jobs of " + std::to_string(min_gpus) + "+ GPUs" : "") + ")");
    if (gpus) finding.evidence.emplace_back("job_gpus", std::to_string(*gpus) + " (" + gpus.source() + ")");
    finding.remediation.push_back(RemediationOp::manual_step(
        "raise the soft open-files limit to at least " + std::to_string(minimum) +
        ": ulimit -n in the job script (up to the hard limit), docker/podman --ulimit nofile=" +
        std::to_string(minimum) + ", LimitNOFILE= for slurmd or the container runtime's systemd unit"));
}

const TableRule kNofileLow{
    RuleInfo{
        .id = "mem.nofile-low",
        .title = "Open-files limit too low for the job's size",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeCli,
        .checks = "The task's soft RLIMIT_NOFILE against the profile's `container.open_files_min` (default "
                  "65536), for jobs of at least `container.open_files_min_job_gpus` GPUs (default 64; 0 for every "
                  "job).",
        .why = "Each rank holds sockets to its bootstrap and proxy peers, and with NCCL's socket transport (or a "
               "fallback to it) one per connection and channel; the root rank accepts one per rank at init, and "
               "PyTorch data loader workers pass tensors as file descriptors. Limits of 1024, the usual soft "
               "default, end in \"Too many open files\" failures only once the job is large.",
        .evidence = "The limit and where it was read, the profile's minimum and the job's GPU count.",
        .fix = "Raise the soft limit: `ulimit -n` up to the hard limit, `--ulimit nofile=` for docker or podman, "
               "`LimitNOFILE=` for slurmd or the container runtime's unit.",
        .parameters = kNofileLowParameters,
    },
    check_nofile_low};

}  // namespace

void register_container_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kShmSmall);
    rules.push_back(&kMemlock);
    rules.push_back(&kNofileLow);
}

}  // namespace launchguard
