// topo.silently-ignored, topo.nccl-rejects, topo.busid-drift, topo.numa-drift:
// what the topology file in effect says, read as NCCL reads it. Where the
// file is (topo.file-missing, topo.not-propagated, topo.required) is in
// rules/topology_rules.cpp.
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
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"
#include "rules/topology_file_in_effect.h"
#include "util/text.h"

namespace launchguard {
namespace {

using rules::join;
using topo_rules::add_topo_evidence;
using topo_rules::find_topo_file;
using topo_rules::mount_and_point;
using topo_rules::profile_container_path;
using topo_rules::TopoFileInEffect;
using topo_rules::TopoLookup;

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

// ---------------------------------------------------------------- the rules

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

}  // namespace

void topo_rules::register_topology_content_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kSilentlyIgnored);
    rules.push_back(&kNcclRejects);
    rules.push_back(&kBusidDrift);
    rules.push_back(&kNumaDrift);
}

}  // namespace launchguard
