#include "node/node_verdict.h"

#include <algorithm>

#include "util/text_escape.h"

namespace launchguard {

std::string_view to_string(NodeHealth health) {
    switch (health) {
        case NodeHealth::healthy:
            return "healthy";
        case NodeHealth::warning:
            return "warning";
        case NodeHealth::degraded:
            return "degraded";
        case NodeHealth::unknown:
            return "unknown";
    }
    return "unknown";
}

std::string_view to_string(RuleOutcome outcome) {
    switch (outcome) {
        case RuleOutcome::pass:
            return "pass";
        case RuleOutcome::warn:
            return "warn";
        case RuleOutcome::block:
            return "block";
        case RuleOutcome::unknown:
            return "unknown";
    }
    return "unknown";
}

namespace {

// Strongest first: a rule with a blocking finding and an unknown blocks.
int strength(RuleOutcome outcome) {
    switch (outcome) {
        case RuleOutcome::block:
            return 3;
        case RuleOutcome::warn:
            return 2;
        case RuleOutcome::unknown:
            return 1;
        case RuleOutcome::pass:
            return 0;
    }
    return 0;
}

void raise(RuleVerdict& verdict, RuleOutcome outcome, const std::string& message) {
    if (strength(outcome) <= strength(verdict.outcome)) return;
    verdict.outcome = outcome;
    verdict.message = message;
}

// Messages quote sysfs values and paths, which may hold any byte, and NPD
// copies the line into node conditions and events: line breaks become
// spaces, every other control or invalid byte is escaped (printable_text),
// and the escaped line is cut to max_bytes between characters of the
// message, never inside an escape.
std::string escaped_line(std::string text, std::size_t max_bytes) {
    std::replace_if(
        text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
    std::string_view raw(text);
    std::string line = printable_text(raw);
    while (line.size() > max_bytes) {
        // Each byte of the message is at least one byte escaped: dropping the
        // excess from the message drops at least as much from the line.
        raw = raw.substr(0, utf8_prefix(raw, raw.size() - std::min(raw.size(), line.size() - max_bytes)));
        line = printable_text(raw);
    }
    return line;
}

}  // namespace

std::size_t utf8_prefix(std::string_view text, std::size_t max_bytes) {
    if (text.size() <= max_bytes) return text.size();
    std::size_t end = max_bytes;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0U) == 0x80U) --end;
    return end;
}

NodeVerdict verdict_from_report(const Report& report, const std::vector<std::string>& rules) {
    NodeVerdict verdict;
    for (const auto& id : rules) verdict.rules.push_back(RuleVerdict{id, RuleOutcome::pass, {}});
    auto find = [&](const std::string& id) -> RuleVerdict& {
        auto it = std::find_if(verdict.rules.begin(), verdict.rules.end(),
                               [&](const RuleVerdict& r) { return r.rule == id; });
        if (it != verdict.rules.end()) return *it;
        // A finding of a rule outside the list would be a bug in the caller;
        // keep it visible rather than dropping it.
        verdict.rules.push_back(RuleVerdict{id, RuleOutcome::pass, {}});
        return verdict.rules.back();
    };
    for (const auto& finding : report.findings) {
        // In node checks nothing is patched: a patch action is a warning here.
        raise(find(finding.rule), finding.action == Action::block ? RuleOutcome::block : RuleOutcome::warn,
              finding.message);
    }
    for (const auto& unknown : report.unknowns) {
        auto it = std::find_if(verdict.rules.begin(), verdict.rules.end(),
                               [&](const RuleVerdict& r) { return r.rule == unknown.rule; });
        // Unknowns outside any rule ("nccl": the NCCL configuration) say
        // nothing about the node.
        if (it != verdict.rules.end()) raise(*it, RuleOutcome::unknown, unknown.reason);
    }
    const bool blocks = std::any_of(verdict.rules.begin(), verdict.rules.end(),
                                    [](const RuleVerdict& r) { return r.outcome == RuleOutcome::block; });
    const bool warns = std::any_of(verdict.rules.begin(), verdict.rules.end(),
                                   [](const RuleVerdict& r) { return r.outcome == RuleOutcome::warn; });
    verdict.health = blocks ? NodeHealth::degraded : warns ? NodeHealth::warning : NodeHealth::healthy;
    return verdict;
}

NodeVerdict unknown_verdict(std::string problem) {
    NodeVerdict verdict;
    verdict.health = NodeHealth::unknown;
    verdict.problem = std::move(problem);
    return verdict;
}

std::vector<const RuleVerdict*> rules_with(const NodeVerdict& verdict, RuleOutcome outcome) {
    std::vector<const RuleVerdict*> found;
    for (const auto& rule : verdict.rules) {
        if (rule.outcome == outcome) found.push_back(&rule);
    }
    return found;
}

std::string drain_reason(const NodeVerdict& verdict) {
    auto blocking = rules_with(verdict, RuleOutcome::block);
    if (blocking.empty()) return std::string(kDrainReasonPrefix) + " node check unknown";
    std::string reason = std::string(kDrainReasonPrefix) + " " + blocking.front()->rule;
    if (blocking.size() > 1) reason += " +" + std::to_string(blocking.size() - 1);
    return reason;
}

std::string npd_message(const NodeVerdict& verdict, std::size_t max_bytes) {
    std::string text;
    switch (verdict.health) {
        case NodeHealth::healthy:
            text = "launchguard: node healthy (" + std::to_string(verdict.rules.size()) + " rules)";
            break;
        case NodeHealth::warning: {
            auto warned = rules_with(verdict, RuleOutcome::warn);
            text = "launchguard: healthy, warning " + warned.front()->rule;
            if (warned.size() > 1) text += " +" + std::to_string(warned.size() - 1);
            break;
        }
        case NodeHealth::degraded: {
            auto blocking = rules_with(verdict, RuleOutcome::block);
            text = "launchguard: " + blocking.front()->rule;
            if (blocking.size() > 1) text += " +" + std::to_string(blocking.size() - 1);
            text += ": " + blocking.front()->message;
            break;
        }
        case NodeHealth::unknown:
            text = "launchguard: unknown: " + verdict.problem;
            break;
    }
    std::string line = escaped_line(std::move(text), max_bytes);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line;
}

}  // namespace launchguard
