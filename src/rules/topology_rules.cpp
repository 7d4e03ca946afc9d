// topo.*: the NCCL topology file (field case 4, docs/design/RULES.md;
// ncclTopoGetSystem in NCCL's src/graph/topo.cc, the parser in xml.cc). Every
// rule looks at the file NCCL will open for this task — NCCL_TOPO_FILE as the
// task resolves it, else NCCL's default path — through the task's own view
// of the filesystem, because that is where the host/container gap opens.
// This file: where the file is (topo.file-missing, topo.not-propagated,
// topo.required) and the family's registration; what the file says is in
// rules/topology_content_rules.cpp.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nccl/host_topology.h"
#include "nccl/topology_drift.h"
#include "nccl/topology_file.h"
#include "nccl/topology_placement.h"
#include "rules/families.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"
#include "rules/topology_file_in_effect.h"
#include "util/text.h"

namespace launchguard {
namespace {

using topo_rules::add_topo_evidence;
using topo_rules::describe_state;
using topo_rules::find_topo_file;
using topo_rules::kTopoVariable;
using topo_rules::mount_and_point;
using topo_rules::profile_container_path;
using topo_rules::provide_profile_file;
using topo_rules::readable_file;
using topo_rules::TopoFileInEffect;
using topo_rules::TopoLookup;

constexpr std::string_view kSilentFallback =
    "NCCL silently auto-detects the topology (logged only at INFO since 2.27.3)";

// ---------------------------------------------------------------- topo.file-missing

void check_file_missing(const RuleInput& in, RuleOutput& out) {
    TopoLookup lookup = find_topo_file(in);
    if (!lookup.file) {
        out.unknown("cannot tell whether NCCL_TOPO_FILE names a readable file because " + lookup.unknown_reason);
        return;
    }
    const TopoFileInEffect& topo = *lookup.file;
    // An unset variable is normal (the default path is optional); topo.required
    // decides whether this node class needs a file at all.
    if (!topo.setting || topo.readable()) return;
    // An empty value is not a missing file: NCCL warns and auto-detects, as
    // when the variable is unset. conf.lint says so; topo.required decides
    // whether this node class needs a file.
    if (topo.setting->value.empty()) return;
    if (topo.info.kind == FileKind::unknown || topo.info.kind == FileKind::other) {
        out.unknown("cannot tell whether " + topo.label() +
                    " is a readable file in the container because the view "
                    "says: " +
                    describe_state(topo.info) + (topo.info.detail.empty() ? "" : " (" + topo.info.detail + ")"));
        return;
    }

    std::string where = topo.setting->source == nccl::Source::environment ? "" : " (from " + topo.setting->origin + ")";
    // Say where the task runs: "in the container" is wrong for a bare-metal task.
    const std::string in_view = in.ctx.runtime == Runtime::bare      ? " on this node"
                                : in.ctx.runtime == Runtime::unknown ? " in the task's filesystem"
                                                                     : " in the container";
    Finding& finding = out.fire(topo.label() + where + " is " + describe_state(topo.info) + in_view + ": " +
                                std::string(kSilentFallback));
    add_topo_evidence(finding, topo, in.ctx);

    std::string manual = "make the topology file readable in the container at " + topo.path +
                         " (bind-mount it read-only from the host) or point NCCL_TOPO_FILE at a file the container has";
    if (topo.info.kind == FileKind::dangling_symlink) {
        manual = topo.path + " is a symlink to " + topo.info.resolved_path +
                 ", which the container lacks: mount the target file itself and point NCCL_TOPO_FILE at it";
    }
    finding.remediation = provide_profile_file(in.profile, std::move(manual));
}

// ---------------------------------------------------------------- topo.not-propagated

// A topology file the host has: where the host gets it, and what is there.
struct HostTopology {
    std::string path;    // as the host names it
    std::string origin;  // "host environment", "host /etc/nccl.conf:2", ...
    FileInfo info;       // on the host
    [[nodiscard]] std::string real_path() const { return info.resolved_path.empty() ? path : info.resolved_path; }
};

// The host's own effective topology file, in NCCL's order, then the
// profile's claim. Only files that really exist on the host count: a host
// that is itself broken is not a propagation problem.
std::optional<HostTopology> find_host_topology(const HostView& host, const Profile& profile) {
    Environment host_env = host.env ? host.env.value() : Environment{};
    nccl::EffectiveConfig host_config = nccl::resolve(host_env, *host.files);
    for (auto& candidate : nccl::host_topology_candidates(host_config, profile.topology.host_path, profile.name)) {
        if (candidate.path.empty() || candidate.path.front() != '/') continue;
        FileInfo info = host.files->stat(candidate.path);
        if (readable_file(info)) return HostTopology{std::move(candidate.path), std::move(candidate.origin), info};
    }
    return std::nullopt;
}

// Lower-case bus ids of every <pci> element, the part of a file NCCL matches on.
std::vector<std::string> busid_signature(std::string_view text) {
    std::vector<std::string> ids;
    for (const auto& pci : nccl::parse_topology(text).pcis) ids.push_back(ascii_lower(pci.busid));
    std::sort(ids.begin(), ids.end());
    return ids;
}

// Same bytes, or the same devices written differently (CRLF, spacing).
// nullopt when either file cannot be read.
std::optional<bool> same_topology(const FileView& host_files, const std::string& host_path, const FileView& task_files,
                                  const std::string& task_path) {
    auto host_text = host_files.read(host_path);
    auto task_text = task_files.read(task_path);
    if (!host_text || !task_text) return std::nullopt;
    if (*host_text == *task_text) return true;
    return busid_signature(*host_text) == busid_signature(*task_text);
}

std::string runtime_note(Runtime runtime) {
    switch (runtime) {
        case Runtime::enroot:
        case Runtime::pyxis:
            return "enroot mounts a tmpfs over /var/run, hiding /var/run/nvidia-topologyd, and does not mount "
                   "/etc/nccl.conf";
        case Runtime::kubernetes:
            return "a pod sees only its image and the volumes it mounts, not the node's /etc/nccl.conf or /var/run";
        case Runtime::bare:
        case Runtime::unknown:
            return "";
    }
    return "";
}

void add_host_evidence(Finding& finding, const HostTopology& host_file, const HostView& host) {
    finding.evidence.emplace_back("host_file", host_file.path);
    finding.evidence.emplace_back("host_source", host_file.origin);
    if (host_file.real_path() != host_file.path) {
        finding.evidence.emplace_back("host_resolved_path", host_file.real_path());
    }
    finding.evidence.emplace_back("host_view", host.files->describe());
}

// Where to mount the host's file: the profile's container path when the
// host file is the profile's, else the path the host itself uses.
std::string mount_target(const HostTopology& host_file, const Profile& profile) {
    const std::string& profile_host = profile.topology.host_path;
    bool is_profile_file =
        !profile_host.empty() && (host_file.path == profile_host || host_file.real_path() == profile_host);
    return is_profile_file ? profile_container_path(profile) : host_file.path;
}

void check_with_host_view(const RuleInput& in, RuleOutput& out, const HostView& host) {
    std::optional<HostTopology> host_file = find_host_topology(host, in.profile);
    if (!host_file) {
        if (!host.env) {
            out.unknown("cannot tell whether the host sets NCCL_TOPO_FILE because the host environment is unknown (" +
                        host.env.reason() + ")");
        }
        return;
    }
    TopoLookup lookup = find_topo_file(in);
    if (!lookup.file) {
        out.unknown("cannot tell whether the host's topology file " + host_file->path + " reaches the task because " +
                    lookup.unknown_reason);
        return;
    }
    const TopoFileInEffect& task = *lookup.file;
    if (task.in_process) return;  // the net plugin supplies its own file inside the task
    if (task.info.kind == FileKind::unknown) {
        out.unknown("cannot tell whether the host's topology file " + host_file->path +
                    " reaches the task because "
                    "the task's view cannot tell what is at " +
                    task.path + (task.info.detail.empty() ? "" : " (" + task.info.detail + ")"));
        return;
    }

    std::string problem;
    if (task.readable()) {
        auto same = same_topology(*host.files, host_file->path, *in.files, task.path);
        if (!same) {
            out.unknown("cannot tell whether the task's " + task.label() + " is the host's " + host_file->path +
                        " because one of them cannot be read");
            return;
        }
        if (*same) return;
        problem = "the task's " + task.label() + " lists different devices";
    } else if (!task.setting) {
        problem = "the task has NCCL_TOPO_FILE unset and no " + std::string(nccl::kDefaultTopoPath);
    } else {
        problem = "the task's " + task.label() + " is " + describe_state(task.info);
    }
    std::string note = runtime_note(in.ctx.runtime);
    Finding& finding =
        out.fire("host topology file " + host_file->path + " (" + host_file->origin + ") does not reach the task" +
                 std::string(rules::where_task_runs(in.ctx.runtime)) + ": " + problem +
                 (note.empty() ? "" : " (" + note + ")") + "; " + std::string(kSilentFallback));
    add_host_evidence(finding, *host_file, host);
    add_topo_evidence(finding, task, in.ctx);
    finding.evidence.emplace_back("runtime", std::string(to_string(in.ctx.runtime)));
    if (!note.empty()) finding.evidence.emplace_back("runtime_note", note);
    rules::add_container_evidence(finding, in.ctx);

    // The host's file already at the mount target in the task (mounted by
    // the user, shipped in the image): pointing NCCL at it is the whole fix.
    const std::string target = mount_target(*host_file, in.profile);
    const bool target_is_host_file = readable_file(in.files->stat(target)) &&
                                     same_topology(*host.files, host_file->path, *in.files, target).value_or(false);
    if (target_is_host_file) {
        finding.evidence.emplace_back("container_has_host_file", target);
        finding.remediation = {RemediationOp::set_env(std::string(kTopoVariable), target)};
    } else {
        finding.remediation = mount_and_point(host_file->real_path(), target);
    }
    finding.fix_or_block = true;
}

bool is_container(Runtime runtime) {
    return runtime == Runtime::enroot || runtime == Runtime::pyxis || runtime == Runtime::kubernetes;
}

// A pod whose NCCL_TOPO_FILE lies under none of its volumes (a pod's view
// answers "unknown" only there): the file can only come from the image,
// which the spec review never sees, while the profile says where the node
// keeps its file. The webhook can make the path the node's file: a
// read-only hostPath mount at the path the pod names. Proposed as a patch,
// never a block: the image may well carry a good file, which the launch
// gate, running in the container, reads.
void check_path_in_image(const RuleInput& in, RuleOutput& out, const TopoFileInEffect& task) {
    const std::string& host_path = in.profile.topology.host_path;
    // The point first: kubectl shows a warning's first 120 characters.
    Finding& finding =
        out.fire("the spec review cannot see the image, the launch gate can: " + task.label() +
                 " lies under no volume of the pod, so only the image could hold it; profile " + in.profile.name +
                 " keeps this node's topology file at " + host_path + ": mount it read-only at " + task.path);
    finding.action = Action::patch;
    finding.severity = Severity::warning;
    finding.evidence.emplace_back("profile_host_path", host_path);
    add_topo_evidence(finding, task, in.ctx);
    finding.evidence.emplace_back("runtime", std::string(to_string(in.ctx.runtime)));
    finding.remediation = {RemediationOp::mount_file(host_path, task.path)};
}

// No view of the host: the profile's topology.host_path is the host's claim.
void check_without_host_view(const RuleInput& in, RuleOutput& out) {
    if (in.ctx.runtime == Runtime::bare) return;
    TopoLookup lookup = find_topo_file(in);
    if (!lookup.file) {
        out.unknown("cannot tell whether the task sees a topology file because " + lookup.unknown_reason);
        return;
    }
    const TopoFileInEffect& task = *lookup.file;
    if (task.readable()) return;
    const std::string& host_path = in.profile.topology.host_path;
    if (task.info.kind == FileKind::unknown && in.ctx.runtime == Runtime::kubernetes && !host_path.empty()) {
        check_path_in_image(in, out, task);
        return;
    }
    if (task.info.kind == FileKind::unknown) {
        out.unknown("cannot tell whether the task sees a topology file because the view cannot tell what is at " +
                    task.path + (task.info.detail.empty() ? "" : " (" + task.info.detail + ")"));
        return;
    }
    if (host_path.empty() || !is_container(in.ctx.runtime)) {
        out.unknown(
            "cannot tell whether the host has a topology file that the task misses because launchguard has no "
            "view of the host (run it as the enroot hook, or pass --host-root / --host-env-file)" +
            std::string(in.ctx.runtime == Runtime::unknown ? " and the runtime is unknown" : ""));
        return;
    }

    std::string container_path = profile_container_path(in.profile);
    FileInfo mounted = in.files->stat(container_path);
    std::string note = runtime_note(in.ctx.runtime);
    std::string problem = task.setting ? "the task's " + task.label() + " is " + describe_state(task.info)
                                       : "the task has NCCL_TOPO_FILE unset";
    if (readable_file(mounted)) problem += ", although " + container_path + " is mounted";
    Finding& finding =
        out.fire("profile " + in.profile.name + " puts this node's topology file at " + host_path +
                 ", but it does not reach the " + std::string(to_string(in.ctx.runtime)) + " task: " + problem +
                 (note.empty() ? "" : " (" + note + ")") + "; " + std::string(kSilentFallback));
    finding.evidence.emplace_back("profile_host_path", host_path);
    finding.evidence.emplace_back("profile_container_path", container_path);
    finding.evidence.emplace_back("container_path_found", std::string(to_string(mounted.kind)));
    add_topo_evidence(finding, task, in.ctx);
    finding.evidence.emplace_back("runtime", std::string(to_string(in.ctx.runtime)));
    if (!note.empty()) finding.evidence.emplace_back("runtime_note", note);
    if (readable_file(mounted)) {
        finding.remediation = {RemediationOp::set_env(std::string(kTopoVariable), container_path)};
    } else {
        finding.remediation = mount_and_point(host_path, container_path);
    }
    rules::add_container_evidence(finding, in.ctx);
    finding.fix_or_block = true;
}

void check_not_propagated(const RuleInput& in, RuleOutput& out) {
    if (in.ctx.host && in.ctx.host->files) {
        check_with_host_view(in, out, *in.ctx.host);
    } else {
        check_without_host_view(in, out);
    }
}

// ---------------------------------------------------------------- topo.required

void check_required(const RuleInput& in, RuleOutput& out) {
    if (!in.profile.topology.required) return;
    TopoLookup lookup = find_topo_file(in);
    if (!lookup.file) {
        out.unknown("cannot tell whether a topology file is in effect because " + lookup.unknown_reason);
        return;
    }
    const TopoFileInEffect& topo = *lookup.file;
    if (topo.readable()) return;
    if (topo.info.kind == FileKind::unknown || topo.info.kind == FileKind::other) {
        out.unknown("cannot tell whether a topology file is in effect because the view cannot tell what is at " +
                    topo.path + (topo.info.detail.empty() ? "" : " (" + topo.info.detail + ")"));
        return;
    }
    std::string state = topo.setting ? topo.label() + " is " + describe_state(topo.info)
                                     : "NCCL_TOPO_FILE is unset and " + std::string(nccl::kDefaultTopoPath) + " is " +
                                           describe_state(topo.info);
    Finding& finding =
        out.fire("profile " + in.profile.name + " requires a topology file, but none is in effect: " + state +
                 "; NCCL will use the node's own (in a VM, synthetic) PCI topology without a "
                 "message");
    finding.evidence.emplace_back("profile", in.profile.name);
    if (!in.profile.topology.host_path.empty()) {
        finding.evidence.emplace_back("profile_host_path", in.profile.topology.host_path);
        finding.evidence.emplace_back("profile_container_path", profile_container_path(in.profile));
    }
    add_topo_evidence(finding, topo, in.ctx);
    finding.remediation = provide_profile_file(
        in.profile, "provide the topology file for this node class in the container and set NCCL_TOPO_FILE to it");
}

// ---------------------------------------------------------------- the rules

const TableRule kFileMissing{
    RuleInfo{
        .id = "topo.file-missing",
        .title = "NCCL_TOPO_FILE names no readable file",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "The effective NCCL_TOPO_FILE (process environment, else NCCL_CONF_FILE or ~/.nccl.conf, else "
                  "/etc/nccl.conf), looked up through the task's own view of the filesystem, must be a readable, "
                  "non-empty regular file. Fires when it is missing, empty, a directory, unreadable, or a dangling "
                  "symlink (Azure's /opt/microsoft/ndv5/topo.xml points at ../ndv5-topo.xml, so mounting only the "
                  "ndv5 directory leaves it dangling). /proc/self/fd/N and /dev/fd/N are accepted: aws-ofi-nccl "
                  "writes its generated topology into a memfd. An unset variable is not a finding here; "
                  "topo.required decides whether the node class needs a file.",
        .why = "NCCL does not fail when it cannot open the file: it auto-detects the topology from the task's /sys "
               "and says so only at INFO level since 2.27.3 (WARN before), so with NCCL_DEBUG unset nothing is "
               "printed. It does not fall back to /var/run/nvidia-topologyd/virtualTopology.xml either. In a VM the "
               "synthetic PCI tree separates each GPU from its NIC, which turns GPUDirect RDMA off and mis-pairs GPUs "
               "with NICs: the field case behind this rule lost up to 53% of throughput with no error.",
        .evidence = "NCCL_TOPO_FILE and where it was set (environment, or conf file and line), what the task's view "
                    "found at the path (kind, symlink target, detail) and which view was used.",
        .fix = "Bind-mount the node's topology file read-only into the container and point NCCL_TOPO_FILE at the "
               "mounted path; when the profile names topology.host_path launchguard proposes both. For a symlink, "
               "mount the file it points to, not only the link's directory.",
    },
    check_file_missing};

const TableRule kNotPropagated{
    RuleInfo{
        .id = "topo.not-propagated",
        .title = "Host topology file does not reach the container",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "With a view of the host (the enroot hook, or the CLI with --host-root / --host-env-file): the "
                  "host has a topology file — NCCL_TOPO_FILE from the host environment or host nccl.conf, else "
                  "/var/run/nvidia-topologyd/virtualTopology.xml, else the profile's topology.host_path — and the "
                  "task has no readable copy of it in effect: the variable is missing, the file is not mounted, or "
                  "the task's file lists other devices. Without a host view, a container launch (enroot, pyxis, "
                  "Kubernetes) fires when the profile names topology.host_path and the task sees no topology file; "
                  "a pod whose NCCL_TOPO_FILE lies under none of its volumes (only its image, which the spec "
                  "review cannot see, could hold it) gets a patch, never a block: the profile's file mounted "
                  "read-only at that path; "
                  "other container launches are reported as unknown, bare-metal launches are not checked.",
        .why = "Containers hide the host's topology settings. enroot mounts a tmpfs over /var/run, which hides "
               "NCCL's default path, and from /etc bind-mounts only hosts, hostname, resolv.conf and machine-id, so "
               "the host's /etc/nccl.conf is never read; plain enroot also starts from a cleared environment. NCCL "
               "then auto-detects the VM's synthetic topology without a word (field case 4: the file was on the VM "
               "but not in the enroot container, up to 53% lower throughput).",
        .evidence = "The host's file, where the host gets it (host environment, host conf file and line, default "
                    "path or profile) and its resolved path; the task's NCCL_TOPO_FILE, its source and what the "
                    "task's view found; the runtime and both views.",
        .fix = "Mount the host's file read-only into the container and set NCCL_TOPO_FILE to the mounted path "
               "(enroot hook: ENROOT_MOUNTS and ENROOT_ENVIRON lines; pyxis: --container-mounts and the variable in "
               "the job environment; Kubernetes: a hostPath or ConfigMap volume and an env entry).",
    },
    check_not_propagated};

const TableRule kRequired{
    RuleInfo{
        .id = "topo.required",
        .title = "No topology file where the node class needs one",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "The profile sets topology.required (most VM node classes) and no topology file is in effect for "
                  "the task: NCCL_TOPO_FILE is unset and /var/run/nvidia-topologyd/virtualTopology.xml is absent, or "
                  "the file NCCL_TOPO_FILE names cannot be read.",
        .why = "Without the file NCCL derives GPU and NIC locality from the VM's synthetic /sys PCI tree, where each "
               "device sits alone in its own PCI domain: the GPU-NIC distance disables GPUDirect RDMA and CPU "
               "affinity may come out empty. Nothing is printed at the default NCCL_DEBUG level.",
        .evidence = "The profile and its topology paths, the task's NCCL_TOPO_FILE and its source, and what the "
                    "task's view found.",
        .fix = "Mount the profile's topology.host_path read-only at topology.container_path and set NCCL_TOPO_FILE "
               "to that path.",
    },
    check_required};

}  // namespace

void register_topology_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kFileMissing);
    rules.push_back(&kNotPropagated);
    topo_rules::register_topology_content_rules(rules);
    rules.push_back(&kRequired);
}

}  // namespace launchguard
