#include "report/text_report.h"

#include "util/size_parser.h"
#include "util/text_escape.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <utility>
#include <vector>

namespace launchguard {
namespace {

constexpr const char* kReset = "\033[0m";
constexpr const char* kRed = "\033[1;31m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kCyan = "\033[36m";
constexpr const char* kGreen = "\033[32m";
constexpr const char* kDim = "\033[2m";

std::string paint(const TextStyle& style, const char* color, const std::string& text) {
    return style.color ? std::string(color) + text + kReset : text;
}

const char* color_of(Action action) {
    switch (action) {
        case Action::block:
            return kRed;
        case Action::patch:
            return kCyan;
        default:
            return kYellow;
    }
}

const char* color_of(Decision decision) {
    switch (decision) {
        case Decision::block:
            return kRed;
        case Decision::patch:
            return kCyan;
        case Decision::allow:
            return kGreen;
    }
    return kGreen;
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

std::string pad_right(std::string s, std::size_t width) {
    if (s.size() < width) s.append(width - s.size(), ' ');
    return s;
}

// A warning of severity info (a finding that cannot matter on most
// clusters unless the profile says otherwise) is shown as INFO, after the rest.
bool informational(const Finding& f) { return f.action == Action::warn && f.severity == Severity::info; }

int rank(const Finding& f) {
    switch (f.action) {
        case Action::block:
            return 0;
        case Action::patch:
            return 1;
        default:
            return informational(f) ? 3 : 2;
    }
}

}  // namespace

std::string action_label(Action action) { return upper(to_string(action)); }

std::string describe_remediation(const RemediationOp& op) {
    switch (op.kind) {
        case RemediationOp::Kind::set_env:
            return "set " + op.name + "=" + op.value;
        case RemediationOp::Kind::unset_env:
            return "unset " + op.name;
        case RemediationOp::Kind::mount_file:
            return "mount " + op.host_path + " at " + op.container_path + (op.readonly ? " (read-only)" : "");
        case RemediationOp::Kind::shm_size:
            return "give /dev/shm at least " + format_byte_size(op.bytes);
        case RemediationOp::Kind::add_capability:
            return "add capability " + op.name;
        case RemediationOp::Kind::manual:
            return op.text;
    }
    return op.text;
}

std::string describe_remediations(const std::vector<RemediationOp>& ops) {
    std::string out;
    for (const auto& op : ops) out += (out.empty() ? "" : "; ") + describe_remediation(op);
    return out;
}

std::string rules_with_action(const Report& report, Action action) {
    std::string out;
    std::vector<std::string_view> seen;
    for (const auto& f : report.findings) {
        if (f.action != action || std::find(seen.begin(), seen.end(), f.rule) != seen.end()) continue;
        seen.push_back(f.rule);
        out += (out.empty() ? "" : ",") + f.rule;
    }
    return out.empty() ? "-" : out;
}

std::string render_text(const Report& report, const TextStyle& style, const ReportScope& scope) {
    std::string out;
    // Messages, reasons and fixes quote the launch's own values: escape
    // control characters so a value cannot drive the operator's terminal.
    out += "launchguard " LAUNCHGUARD_VERSION ": profile " + printable_text(report.profile) + " (" +
           printable_text(report.profile_origin) + "), mode " + std::string(to_string(report.mode)) + ": " +
           paint(style, color_of(report.decision), upper(to_string(report.decision))) + "\n";

    // Blocks first, then patches, then warnings; rule order within each.
    std::vector<const Finding*> findings;
    for (const auto& f : report.findings) findings.push_back(&f);
    std::stable_sort(findings.begin(), findings.end(),
                     [](const Finding* a, const Finding* b) { return rank(*a) < rank(*b); });
    std::vector<const Unknown*> listed;
    std::vector<std::string> summarized;  // rule ids, each once
    for (const auto& u : report.unknowns) {
        if (scope.spec_review && !scope.verbose) {
            if (std::find(summarized.begin(), summarized.end(), u.rule) == summarized.end())
                summarized.push_back(u.rule);
        } else {
            listed.push_back(&u);
        }
    }

    std::size_t rule_width = 0;
    for (const auto* f : findings) rule_width = std::max(rule_width, f->rule.size());
    for (const auto* u : listed) rule_width = std::max(rule_width, u->rule.size());
    int blocks = 0;
    int patches = 0;
    int warns = 0;
    int infos = 0;
    for (const auto* f : findings) {
        if (f->action == Action::block)
            ++blocks;
        else if (f->action == Action::patch)
            ++patches;
        else if (informational(*f))
            ++infos;
        else
            ++warns;
        std::string label = informational(*f)
                                ? paint(style, kDim, "INFO ")
                                : paint(style, color_of(f->action), pad_right(action_label(f->action), 5));
        std::string line = "  " + label + "  " + pad_right(f->rule, rule_width) + "  " + printable_text(f->message);
        const std::string fix = describe_remediations(f->remediation);
        if (!fix.empty()) line += paint(style, kDim, "  -> fix: ") + printable_text(fix);
        out += line + "\n";
    }
    for (const auto* u : listed) {
        out += "  " + paint(style, kDim, "?    ") + "  " + pad_right(u->rule, rule_width) +
               "  unknown: " + printable_text(u->reason) + "\n";
    }
    if (!summarized.empty()) {
        // One line, after every finding: users read the first lines.
        std::string rules;
        for (const auto& rule : summarized) rules += (rules.empty() ? "" : ", ") + rule;
        std::string judge =
            scope.unknown_judge.empty()
                ? "judged when the job runs: the SPANK plugin, the enroot hook, `launchguard node-check`"
                : scope.unknown_judge;
        out += "  " + paint(style, kDim, "?    ") + "  " + std::to_string(report.unknowns.size()) + " unknown (" +
               printable_text(judge) + "): " + printable_text(rules) + "  (--unknown to list)\n";
    }
    if (!report.not_applicable.empty()) {
        // One line per reason: usually all NCCL rules for one backend.
        std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
        for (const auto& n : report.not_applicable) {
            auto it = std::find_if(by_reason.begin(), by_reason.end(),
                                   [&](const auto& entry) { return entry.first == n.reason; });
            if (it == by_reason.end()) {
                by_reason.emplace_back(n.reason, std::vector<std::string>{});
                it = std::prev(by_reason.end());
            }
            if (std::find(it->second.begin(), it->second.end(), n.rule) == it->second.end())
                it->second.push_back(n.rule);
        }
        for (const auto& [reason, rules] : by_reason) {
            out += "  " + paint(style, kDim, "-    ") + "  " + std::to_string(rules.size()) +
                   " NCCL rule(s) not applicable: " + printable_text(reason) + "\n";
        }
    }
    out += std::to_string(report.findings.size()) + " finding(s): " + std::to_string(blocks) + " block, " +
           std::to_string(patches) + " patch, " + std::to_string(warns) + " warn" +
           (infos > 0 ? ", " + std::to_string(infos) + " info" : std::string()) + "; " +
           std::to_string(report.unknowns.size()) + " unknown; " + std::to_string(report.rules_evaluated) +
           " rules evaluated\n";
    return out;
}

}  // namespace launchguard
