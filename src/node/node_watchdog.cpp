#include "node/node_watchdog.h"

#include <boost/json.hpp>

#include "engine/profile_loader.h"
#include "report/json_report.h"
#include "report/text_report.h"
#include "util/child_process.h"

namespace launchguard {
namespace json = boost::json;
namespace {

std::optional<RuleOutcome> parse_outcome(std::string_view text) {
    for (RuleOutcome outcome : kAllRuleOutcomes) {
        if (to_string(outcome) == text) return outcome;
    }
    return std::nullopt;
}

std::optional<NodeHealth> parse_health(std::string_view text) {
    for (NodeHealth health : {NodeHealth::healthy, NodeHealth::warning, NodeHealth::degraded, NodeHealth::unknown}) {
        if (to_string(health) == text) return health;
    }
    return std::nullopt;
}

std::string encode(const NodeCheckRun& run) {
    json::array rules;
    for (const auto& rule : run.verdict.rules) {
        rules.push_back(
            json::object{{"rule", rule.rule}, {"outcome", to_string(rule.outcome)}, {"message", rule.message}});
    }
    json::array notes;
    for (const auto& note : run.notes) notes.emplace_back(note);
    // Messages and notes quote sysfs values, which may hold any byte, and
    // json::serialize copies strings as they are: the result must go through
    // the writer that keeps JSON valid UTF-8 (report/json_report.h), or one
    // stray byte would make the whole result unreadable.
    return pretty_json(json::object{{"health", to_string(run.verdict.health)},
                                    {"problem", run.verdict.problem},
                                    {"rules", std::move(rules)},
                                    {"report", run.report},
                                    {"record", run.record},
                                    {"notes", std::move(notes)}});
}

// The child is launchguard itself, but its result is still read strictly: a
// truncated or garbled record is an unknown verdict, not a healthy node.
Result<NodeCheckRun> decode(std::string_view text) {
    try {
        const json::object o = json::parse(text).as_object();
        NodeCheckRun run;
        auto health = parse_health(o.at("health").as_string());
        if (!health) return make_error("unknown health in the node check's result");
        run.verdict.health = *health;
        run.verdict.problem = json::value_to<std::string>(o.at("problem"));
        for (const auto& v : o.at("rules").as_array()) {
            const auto& r = v.as_object();
            auto outcome = parse_outcome(r.at("outcome").as_string());
            if (!outcome) return make_error("unknown rule outcome in the node check's result");
            run.verdict.rules.push_back(RuleVerdict{json::value_to<std::string>(r.at("rule")), *outcome,
                                                    json::value_to<std::string>(r.at("message"))});
        }
        run.report = json::value_to<std::string>(o.at("report"));
        run.record = json::value_to<std::string>(o.at("record"));
        for (const auto& n : o.at("notes").as_array()) run.notes.push_back(json::value_to<std::string>(n));
        return run;
    } catch (const std::exception& e) {
        return make_error(std::string("the node check's result is malformed: ") + e.what());
    }
}

NodeCheckRun check_in_this_process(const NodeCheckRequest& request, const StepNote& note) {
    NodeCheckRun run;
    note("loading the profile " + request.profile);
    auto profile = load_profile(request.profile);
    if (!profile) {
        run.verdict = unknown_verdict("profile: " + profile.error().to_string());
        return run;
    }
    const bool record = request.record || request.format == NodeReportFormat::json;
    NodeCheckOptions options = request.options;
    options.record_facts = options.record_facts || record;
    auto check = run_node_check(*profile, options, note);
    if (!check) {
        run.verdict = unknown_verdict("cannot inspect the node: " + check.error().to_string());
        return run;
    }
    if (check->cache_error) run.notes.push_back("topology cache not refreshed: " + check->cache_error->to_string());
    run.verdict = verdict_from_report(check->report, check->rules);
    if (record && check->record_facts) {
        const NodeRecordHeader header{request.node_class.empty() ? profile->name : request.node_class,
                                      std::chrono::system_clock::now()};
        run.record = pretty_json(node_record_json(check->report, run.verdict, *check->record_facts, header));
    }
    switch (request.format) {
        case NodeReportFormat::none:
            break;
        case NodeReportFormat::text:
            run.report = render_text(check->report, TextStyle{request.color});
            break;
        case NodeReportFormat::json:
            // The record holds the report's JSON and names the node.
            run.report = run.record;
            break;
    }
    return run;
}

}  // namespace

NodeCheckRun run_node_check_with_deadline(const NodeCheckRequest& request, std::chrono::milliseconds deadline) {
    auto payload = run_forked_with_deadline(
        [&request](const StepNote& note) { return encode(check_in_this_process(request, note)); }, deadline);
    if (!payload) return NodeCheckRun{unknown_verdict("node check " + payload.error().message), {}, {}, {}};
    auto run = decode(*payload);
    if (!run) return NodeCheckRun{unknown_verdict(run.error().message), {}, {}, {}};
    return std::move(run).value();
}

}  // namespace launchguard
