// topo.*: the NCCL topology file (field case 4, docs/design/RULES.md;
// ncclTopoGetSystem in NCCL's src/graph/topo.cc, the parser in xml.cc). Every
// rule looks at the file NCCL will open for this task — NCCL_TOPO_FILE as the
// task resolves it, else NCCL's default path — through the task's own view
// of the filesystem, because that is where the host/container gap opens.
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
#include "util/text.h"

namespace launchguard {
namespace {

using rules::join;

constexpr std::string_view kTopoVariable = "NCCL_TOPO_FILE";
constexpr std::string_view kSilentFallback =
    "NCCL silently auto-detects the topology (logged only at INFO since 2.27.3)";

bool readable_file(const FileInfo& info) { return info.non_empty_regular(); }

// The topology file NCCL will open for the task, as the task sees it.
struct TopoFileInEffect {
    const nccl::Setting* setting = nullptr;  // null: the variable is unset and NCCL tries its default path
    std::string path;
    bool in_process = false;  // /proc/self/fd/N written by a net plugin: not on any disk
    FileInfo info;

    [[nodiscard]] bool readable() const { return in_process || readable_file(info); }
    [[nodiscard]] std::string label() const {
        return setting ? std::string(kTopoVariable) + "=" + path : std::string(nccl::kDefaultTopoPath);
    }
};

// Either the file in effect, or why launchguard cannot tell which it is.
struct TopoLookup {
    std::optional<TopoFileInEffect> file;
    std::string unknown_reason;
};

TopoLookup find_topo_file(const RuleInput& in) {
    const nccl::Setting* setting = in.nccl.get(kTopoVariable);
    bool set_in_env = setting != nullptr && setting->source == nccl::Source::environment;
    if (!in.nccl.decided(kTopoVariable) && !set_in_env) {
        // The environment beats every conf file, so a conf value proves nothing.
        return {std::nullopt, rules::env_unknown_reason(in.ctx, kTopoVariable)};
    }
    if (!in.files) return {std::nullopt, "there is no view of the task's filesystem"};

    TopoFileInEffect topo;
    topo.setting = setting;
    topo.path = topo.setting ? topo.setting->value : std::string(nccl::kDefaultTopoPath);
    if (nccl::is_in_process_path(topo.path)) {
        topo.in_process = true;
        return {topo, {}};
    }
    if (topo.path.empty()) {
        // getenv returns "", NCCL's fopen("") fails, and it does not try the default path.
        topo.info.kind = FileKind::missing;
        topo.info.detail = "the value is empty";
        return {topo, {}};
    }
    if (topo.path.front() != '/') {
        return {std::nullopt,
                topo.label() + " is relative to the task's working directory, which launchguard does not know"};
    }
    topo.info = in.files->stat(topo.path);
    return {topo, {}};
}

// What the view found, as a phrase for messages: "missing", "a dangling symlink to /x", ...
std::string describe_state(const FileInfo& info) {
    switch (info.kind) {
        case FileKind::regular:
            return info.size_known && info.size == 0 ? "an empty file" : "a readable file";
        case FileKind::directory:
            return "a directory (NCCL opens it and reads nothing)";
        case FileKind::missing:
            return info.detail.empty() ? "missing" : "missing (" + info.detail + ")";
        case FileKind::dangling_symlink:
            return info.resolved_path.empty() ? "a dangling symlink" : "a dangling symlink to " + info.resolved_path;
        case FileKind::unreadable:
            return "unreadable by the task" + (info.detail.empty() ? "" : " (" + info.detail + ")");
        case FileKind::other:
            return "not a regular file";
        case FileKind::unknown:
            return "unknown";
    }
    return "unknown";
}

void add_topo_evidence(Finding& finding, const TopoFileInEffect& topo, const LaunchContext& ctx) {
    if (topo.setting) {
        rules::add_setting_evidence(finding, *topo.setting);
    } else {
        finding.evidence.emplace_back(kTopoVariable, "unset");
        finding.evidence.emplace_back("default_path", std::string(nccl::kDefaultTopoPath));
    }
    if (topo.in_process) return;
    bool empty_file = topo.info.kind == FileKind::regular && topo.info.size_known && topo.info.size == 0;
    finding.evidence.emplace_back("found", empty_file ? "empty file" : std::string(to_string(topo.info.kind)));
    if (!topo.info.resolved_path.empty() && topo.info.resolved_path != topo.path) {
        finding.evidence.emplace_back("resolved_path", topo.info.resolved_path);
    }
    if (!topo.info.detail.empty()) finding.evidence.emplace_back("detail", topo.info.detail);
    finding.evidence.emplace_back("container_view", ctx.files->describe());
}

// Where the profile wants containers to see the node class's file.
std::string profile_container_path(const Profile& profile) {
    return profile.topology.container_path.empty() ? profile.topology.host_path : profile.topology.container_path;
}

std::vector<RemediationOp> mount_and_point(const std::string& host_path, const std::string& container_path) {
    return {RemediationOp::mount_file(host_path, container_path),
            RemediationOp::set_env(std::string(kTopoVariable), container_path)};
}

// The profile's file when it names one, else a human step.
std::vector<RemediationOp> provide_profile_file(const Profile& profile, std::string manual_text) {
    if (profile.topology.host_path.empty()) return {RemediationOp::manual_step(std::move(manual_text))};
    return mount_and_point(profile.topology.host_path, profile_container_path(profile));
}

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

// ---------------------------------------------------------------- reading the file

struct ParsedTopo {
    TopoFileInEffect file;
    const std::string& text;  // owned by the evaluation's SharedAnalysis
    const nccl::TopologyFile& parsed;
};

// The file in effect, read and parsed, when there is one to judge. Missing,
// empty or unreadable files belong to topo.file-missing / topo.required;
// a memfd from a net plugin is not readable from outside the task.
std::optional<ParsedTopo> read_topo_file(const RuleInput& in, RuleOutput& out, std::string_view question) {
    TopoLookup lookup = find_topo_file(in);
    if (!lookup.file) {
        out.unknown("cannot tell " + std::string(question) + " because " + lookup.unknown_reason);
        return std::nullopt;
    }
    const TopoFileInEffect& topo = *lookup.file;
    if (topo.in_process) return std::nullopt;
    if (topo.info.kind == FileKind::unknown) {
        out.unknown("cannot tell " + std::string(question) + " because the content of " + topo.path + " is not known" +
                    (topo.info.detail.empty() ? "" : " (" + topo.info.detail + ")"));
        return std::nullopt;
    }
    if (!topo.readable()) return std::nullopt;
    const ReadTopologyFile& read = in.shared.topology_file(*in.files, topo.path);
    if (!read.text) {
        out.unknown("cannot tell " + std::string(question) + " because " + read.text.error().to_string());
        return std::nullopt;
    }
    return ParsedTopo{topo, *read.text, read.parsed};
}

// Line `number` (1-based) as written, with tabs and CRs made visible.
std::string line_text(std::string_view text, int number) {
    if (number <= 0) return "";
    std::size_t start = 0;
    for (int line = 1; line < number; ++line) {
        start = text.find('\n', start);
        if (start == std::string_view::npos) return "";
        ++start;
    }
    std::string_view line = text.substr(start, text.find('\n', start) - start);
    std::string shown;
    for (char c : line) {
        if (c == '\t')
            shown += "\\t";
        else if (c == '\r')
            shown += "\\r";
        else
            shown += c;
    }
    constexpr std::size_t kMaxShown = 200;
    if (shown.size() > kMaxShown) shown = shown.substr(0, kMaxShown) + "...";
    return shown;
}

std::string at_line(int line) { return line > 0 ? " on line " + std::to_string(line) : ""; }

void add_parse_evidence(Finding& finding, const ParsedTopo& topo, const LaunchContext& ctx) {
    add_topo_evidence(finding, topo.file, ctx);
    finding.evidence.emplace_back("nccl_outcome", std::string(nccl::to_string(topo.parsed.outcome)));
    if (!topo.parsed.reason.empty()) finding.evidence.emplace_back("nccl_message", topo.parsed.reason);
    if (topo.parsed.line > 0) {
        finding.evidence.emplace_back("line", std::to_string(topo.parsed.line));
        finding.evidence.emplace_back("line_text", line_text(topo.text, topo.parsed.line));
    }
}

// ---------------------------------------------------------------- topo.silently-ignored

std::string ignored_fix(const nccl::TopologyFile& parsed) {
    const std::string& reason = parsed.reason;
    if (reason.starts_with("root element is not <system>")) {
        return "make <system version=\"1\"> the root element, holding one <cpu> per NUMA node with the node's <pci> "
               "devices (an hwloc <topology> export is not an NCCL topology file)";
    }
    if (reason.starts_with("<system> has no")) {
        return "add the node's <cpu> elements (one per NUMA node, holding its <pci> devices) under <system>" +
               at_line(parsed.line);
    }
    if (reason.starts_with("the file holds no elements")) {
        return "the file holds no XML elements: replace it with the topology file for this node class";
    }
    return "rewrite the file so NCCL reads it: " + reason;
}

std::string upper_case_fix(const std::vector<std::string>& busids) {
    std::vector<std::string> pairs;
    for (const auto& id : busids) pairs.push_back(id + " -> " + ascii_lower(id));
    return "write bus ids in lower case, as NCCL formats them: " + join(pairs);
}

void check_silently_ignored(const RuleInput& in, RuleOutput& out) {
    auto topo = read_topo_file(in, out, "whether NCCL uses the topology file");
    if (!topo) return;
    const nccl::TopologyFile& parsed = topo->parsed;
    bool ignored = parsed.outcome == nccl::TopoOutcome::silently_ignored;
    const auto& upper = parsed.upper_case_busids;
    if (!ignored && upper.empty()) return;

    std::string consequence = ignored
                                  ? parsed.reason
                                  : "bus ids " + join(upper) +
                                        " are upper case and never match NCCL's "
                                        "lower-case ids, so those devices are trimmed from the file without a message";
    Finding& finding = out.fire(topo->file.label() + ": " + consequence);
    add_parse_evidence(finding, *topo, in.ctx);
    if (!upper.empty()) finding.evidence.emplace_back("upper_case_busids", join(upper));

    std::vector<std::string> steps;
    if (ignored) steps.push_back(ignored_fix(parsed));
    if (!upper.empty()) steps.push_back(upper_case_fix(upper));
    finding.remediation = {RemediationOp::manual_step("fix the file " + topo->file.path + ": " + join(steps, "; "))};
}

// ---------------------------------------------------------------- topo.nccl-rejects

std::string rejection_fix(const nccl::TopologyFile& parsed, const std::string& line) {
    const std::string& reason = parsed.reason;
    std::string where = at_line(parsed.line);
    if (line.find("<?xml") != std::string::npos) {
        return "remove the <?xml ...?> declaration" + where + ": NCCL's reader accepts only elements and comments";
    }
    if (reason.find("got '\\t'") != std::string::npos) {
        return "replace the tab indentation with spaces (the first tab is" + where + ")";
    }
    if (reason.find("got '\\n'") != std::string::npos) {
        return "join the tag that starts" + where + " onto one line: NCCL needs each tag on a single line";
    }
    if (reason.starts_with("Attribute version of node")) {
        return "add version=\"1\" to the <system> element" + where;
    }
    if (reason.starts_with("XML Topology has wrong version")) {
        return "NVIDIA NCCL reads only <system version=\"1\">; this file (" + reason +
               ") is for another library, e.g. an RCCL model: use the NCCL topology file for this node class";
    }
    if (reason.starts_with("XML Parse : unterminated")) {
        return "close the element opened" + where + ": its end tag is missing";
    }
    if (reason.starts_with("XML Mismatch")) {
        return "make the end tag" + where + " match the element it closes (" + reason + ")";
    }
    if (reason.starts_with("XML Parse : Expected (double) quote")) {
        return "quote every attribute value" + where;
    }
    return "fix the file" + where + " so that NCCL's reader accepts it: " + reason;
}

void check_nccl_rejects(const RuleInput& in, RuleOutput& out) {
    auto topo = read_topo_file(in, out, "whether NCCL can parse the topology file");
    if (!topo || topo->parsed.outcome != nccl::TopoOutcome::rejected) return;
    const nccl::TopologyFile& parsed = topo->parsed;
    Finding& finding = out.fire(topo->file.label() + " makes NCCL fail communicator init" + at_line(parsed.line) +
                                ": \"" + parsed.reason + "\"");
    add_parse_evidence(finding, *topo, in.ctx);
    finding.remediation = {RemediationOp::manual_step("fix the file " + topo->file.path + ": " +
                                                      rejection_fix(parsed, line_text(topo->text, parsed.line)))};
}

// ---------------------------------------------------------------- topo.busid-drift

// Puts the profile's file first in the remediation; proposing it only helps
// when the task uses another one.
void propose_profile_file(Finding& finding, const Profile& profile, const TopoFileInEffect& in_use) {
    std::string profile_path = profile_container_path(profile);
    bool uses_profile_file = profile_path == in_use.path || profile_path == in_use.info.resolved_path;
    if (profile.topology.host_path.empty() || uses_profile_file) return;
    auto ops = mount_and_point(profile.topology.host_path, profile_path);
    finding.remediation.insert(finding.remediation.begin(), ops.begin(), ops.end());
}

// "0000:3b:00.0 (written 0000:3B:00.0)" when only the case differs.
std::vector<std::string> annotate_case(const std::vector<std::string>& missing, const nccl::TopologyFile& parsed) {
    std::vector<std::string> shown;
    for (const auto& id : missing) {
        auto upper = std::find_if(parsed.upper_case_busids.begin(), parsed.upper_case_busids.end(),
                                  [&](const std::string& written) { return ascii_lower(written) == id; });
        shown.push_back(upper == parsed.upper_case_busids.end() ? id : id + " (written " + *upper + ")");
    }
    return shown;
}

std::string count_of(std::size_t missing, std::size_t total, std::string_view what) {
    return std::to_string(missing) + " of " + std::to_string(total) + " " + std::string(what);
}

// The file NCCL accepts, when there is one and the node is known to compare
// it with; otherwise says why the rule cannot decide `question`.
std::optional<ParsedTopo> accepted_file_on_known_node(const RuleInput& in, RuleOutput& out, std::string_view question) {
    auto topo = read_topo_file(in, out, "whether the topology file " + std::string(question));
    if (!topo || topo->parsed.outcome != nccl::TopoOutcome::accepted) return std::nullopt;
    if (!in.ctx.topology) {
        out.unknown("cannot tell whether " + topo->file.label() + " " + std::string(question) +
                    " because the node topology is unknown (" + in.ctx.topology.reason() + ")");
        return std::nullopt;
    }
    return topo;
}

void check_busid_drift(const RuleInput& in, RuleOutput& out) {
    auto topo = accepted_file_on_known_node(in, out, "describes this node");
    if (!topo) return;
    const NodeTopology& node = in.ctx.topology.value();
    nccl::TopologyDrift drift = nccl::compare_with_node(topo->parsed, node);
    if (!drift.drifted()) return;

    std::vector<std::string> parts;
    if (!drift.gpus_missing.empty()) parts.push_back(count_of(drift.gpus_missing.size(), node.gpus.size(), "GPUs"));
    if (!drift.nics_missing.empty()) {
        parts.push_back(count_of(drift.nics_missing.size(), node.nics.size(), "RDMA NICs"));
    }
    Finding& finding = out.fire(topo->file.label() + " does not list " + join(parts, " and ") +
                                " of this node: NCCL silently drops the unmatched parts of the file and auto-detects "
                                "those devices (a file for another SKU or VM layout)");
    add_topo_evidence(finding, topo->file, in.ctx);
    if (!drift.gpus_missing.empty()) {
        finding.evidence.emplace_back("gpus_missing", join(annotate_case(drift.gpus_missing, topo->parsed)));
    }
    if (!drift.nics_missing.empty()) {
        finding.evidence.emplace_back("nics_missing", join(annotate_case(drift.nics_missing, topo->parsed)));
    }
    if (!drift.not_on_node.empty()) finding.evidence.emplace_back("file_devices_not_on_node", join(drift.not_on_node));
    finding.evidence.emplace_back("node_topology", node.source.empty() ? in.ctx.topology.source() : node.source);

    finding.remediation = {RemediationOp::manual_step(
        "use the topology file written for this node class (its GPUs and NICs must appear with these exact lower-case "
        "bus ids), or dump one on this hardware with NCCL_TOPO_DUMP_FILE and keep its <cpu> and <pci> elements")};
    propose_profile_file(finding, in.profile, topo->file);
}

// ---------------------------------------------------------------- topo.numa-drift

std::string numa_and_cpus(std::string_view numa, const std::string& cpus) {
    return "NUMA " + std::string(numa) + (cpus.empty() ? "" : ", CPUs " + cpus);
}

void check_numa_drift(const RuleInput& in, RuleOutput& out) {
    auto topo = accepted_file_on_known_node(in, out, "places devices where this node has them");
    if (!topo) return;
    const NodeTopology& node = in.ctx.topology.value();
    nccl::PlacementDrift drift = nccl::compare_placement(topo->parsed, node);
    if (!drift.drifted()) return;

    std::vector<std::string> parts;
    if (!drift.devices.empty()) {
        parts.push_back(std::to_string(drift.devices.size()) +
                        " device(s) on another NUMA node or CPU set than the "
                        "node has them");
    }
    if (!drift.pairings.empty()) {
        parts.push_back(std::to_string(drift.pairings.size()) +
                        " GPU(s) paired with a NIC the node does not put "
                        "nearest");
    }
    Finding& finding = out.fire(topo->file.label() + " places " + join(parts, " and ") +
                                ": NCCL takes CPU affinity and GPU-NIC distances from the file, so it pins threads to "
                                "the wrong socket and sends through far NICs without a message");
    add_topo_evidence(finding, topo->file, in.ctx);
    for (const auto& device : drift.devices) {
        std::string node_numa = std::to_string(device.node_numa);
        finding.evidence.emplace_back(device.kind + " " + device.busid,
                                      "file line " + std::to_string(device.line) + ": " +
                                          numa_and_cpus(device.file_numa, device.file_cpus) + " (<cpu> on line " +
                                          std::to_string(device.cpu_line) +
                                          "); node: " + numa_and_cpus(node_numa, device.node_cpus));
    }
    for (const auto& pairing : drift.pairings) {
        finding.evidence.emplace_back(
            "nearest NIC of GPU " + pairing.gpu_busid,
            "file line " + std::to_string(pairing.gpu_line) + ": " + join(pairing.file_nearest) + " (" +
                std::string(nccl::to_string(pairing.file_path)) + "); node: " + join(pairing.node_nearest) + " (" +
                std::string(nccl::to_string(pairing.node_path)) + ")");
    }
    finding.evidence.emplace_back("node_topology", node.source.empty() ? in.ctx.topology.source() : node.source);

    finding.remediation = {RemediationOp::manual_step(
        "use this node's own topology file: each <cpu numaid affinity> must hold the GPUs and NICs the node has on "
        "that NUMA node, each GPU under the switch of its nearest NIC. Dump one on this node with "
        "NCCL_TOPO_DUMP_FILE=/tmp/topo.xml (one rank of any NCCL job), keep its <cpu> and <pci> elements, or compare "
        "with `launchguard topo FILE --live`")};
    propose_profile_file(finding, in.profile, topo->file);
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

const TableRule kSilentlyIgnored{
    RuleInfo{
        .id = "topo.silently-ignored",
        .title = "Topology file that NCCL reads but ignores",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "Reads the topology file in effect (NCCL_TOPO_FILE, or the default "
                  "/var/run/nvidia-topologyd/virtualTopology.xml) through the task's view and parses it as NCCL "
                  "2.30's reader does. Fires when the file parses but contributes nothing — only comments or "
                  "whitespace, a root element other than <system> (an hwloc <topology> export, for example), a "
                  "<system> with no <cpu> children — or when it writes PCI bus ids with upper-case hex digits.",
        .why = "NCCL treats such a file as if it were absent: it logs at most INFO \"Ignoring element ...\" and "
               "auto-detects the topology. Bus ids are compared with strcmp against the lower-case ids NCCL formats "
               "itself (%04x:%02x:%02x.%x), so a device written 0000:3B:00.0 never matches and its branch of the "
               "file is trimmed away without a message.",
        .evidence = "The file and where NCCL_TOPO_FILE was set, the reader's verdict and reason, the line, and the "
                    "upper-case bus ids.",
        .fix = "Fix the file: <system version=\"1\"> as the root, the node's <cpu> and <pci> elements under it, bus "
               "ids in lower case. A file dumped with NCCL_TOPO_DUMP_FILE on the same hardware has the right shape.",
    },
    check_silently_ignored};

const TableRule kNcclRejects{
    RuleInfo{
        .id = "topo.nccl-rejects",
        .title = "Topology file that makes NCCL fail",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeCli,
        .nccl_only = true,
        .checks = "Parses the topology file in effect as NCCL 2.30's reader (src/graph/xml.cc) does and fires when "
                  "NCCL would abort communicator initialisation: an <?xml ?> declaration, tab indentation, a tag "
                  "split across lines, <system> without a version or with a version other than 1 (RCCL's model "
                  "files use 2), unquoted attribute values, mismatched or unterminated elements, or more elements "
                  "than NCCL's limits allow.",
        .why = "This failure is loud — NCCL prints a WARN and communicator init returns an error — but only after "
               "the job has been scheduled and its containers started, on every rank at once. Files written by "
               "general XML tools (editors, xmllint, hwloc's lstopo) usually carry a declaration or tabs, which "
               "NCCL's hand-written reader does not accept.",
        .evidence = "The file and where NCCL_TOPO_FILE was set, the line and its text, and the message NCCL prints.",
        .fix = "Fix the file at the line shown (remove the declaration, indent with spaces, keep each tag on one "
               "line, set version=\"1\"), or use the NCCL topology file written for this node class.",
    },
    check_nccl_rejects};

const TableRule kBusidDrift{
    RuleInfo{
        .id = "topo.busid-drift",
        .title = "Topology file written for other hardware",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeNode | kScopeCli,
        .nccl_only = true,
        .checks = "When NCCL accepts the topology file, compares its <pci busid> entries with this node's GPUs and "
                  "RDMA NICs (hwloc PCI bus ids, lower case) and fires when any of them is missing from the file.",
        .why = "NCCL keeps only the parts of the file whose bus ids equal a device it detected itself and deletes "
               "the rest (ncclTopoTrimXml), without a message. A file for another SKU or VM layout therefore "
               "degrades to auto-detection for the unmatched devices: GPU-NIC pairing and GPUDirect RDMA fall back "
               "to what the synthetic PCI tree suggests.",
        .evidence = "The file and where it was set, the node's GPUs and NICs missing from it, the file's devices "
                    "this node does not have, and where the node topology came from.",
        .fix = "Use the topology file for this node class (for example Azure's ndv5-topo.xml on ND H100 v5), or "
               "dump one on this hardware with NCCL_TOPO_DUMP_FILE and keep its <cpu> and <pci> elements.",
    },
    check_busid_drift};

const TableRule kNumaDrift{
    RuleInfo{
        .id = "topo.numa-drift",
        .title = "Topology file that misplaces devices across NUMA nodes",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeNode | kScopeCli,
        .nccl_only = true,
        .checks = "When NCCL accepts the topology file, compares, for every GPU and NIC that both the file and this "
                  "node have, the NUMA node of the file's enclosing <cpu numaid> and its affinity mask with the NUMA "
                  "node and CPUs hwloc reports; and, per GPU, the nearest NICs by the file's tree (PIX, PXB, PHB, SYS) "
                  "with the nearest by the node's PCI tree. Fires on any disagreement. A node whose PCI tree shows "
                  "no switches (a VM) ties the NICs of a socket, so the file may pick among them.",
        .why = "NCCL does not check the file against the machine: it pins each rank's threads to the affinity of the "
               "file's <cpu> and derives GPU-NIC distances from the file's tree. A file whose <cpu> blocks are "
               "swapped, or that hangs a NIC under the other socket, therefore puts proxy threads on the far socket "
               "and pairs each GPU with a far NIC, with GPUDirect RDMA judged by the wrong distance: runtime topology "
               "drift, with no error anywhere.",
        .evidence = "The file and where it was set; per disagreeing GPU or NIC, the file's line, NUMA node and CPUs "
                    "(and the line of its <cpu>) next to the node's; per GPU whose pairing differs, the nearest NICs "
                    "and path type by the file and by the node; where the node topology came from.",
        .fix = "Use this node's own topology file (the provider's file for this VM size, or one dumped on the node "
               "with NCCL_TOPO_DUMP_FILE, keeping its <cpu> and <pci> elements); `launchguard topo FILE --live` "
               "shows each device's NUMA node in the file next to the node's.",
    },
    check_numa_drift};

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
    rules.push_back(&kSilentlyIgnored);
    rules.push_back(&kNcclRejects);
    rules.push_back(&kBusidDrift);
    rules.push_back(&kNumaDrift);
    rules.push_back(&kRequired);
}

}  // namespace launchguard
