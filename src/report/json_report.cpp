#include "report/json_report.h"

#include <boost/json.hpp>

#include "util/text_escape.h"

namespace launchguard {

namespace json = boost::json;

json::value remediation_to_json(const RemediationOp& op) {
    json::object o;
    o["op"] = to_string(op.kind);
    switch (op.kind) {
        case RemediationOp::Kind::set_env:
            o["name"] = op.name;
            o["value"] = op.value;
            break;
        case RemediationOp::Kind::unset_env:
        case RemediationOp::Kind::add_capability:
            o["name"] = op.name;
            break;
        case RemediationOp::Kind::mount_file:
            o["host"] = op.host_path;
            o["container"] = op.container_path;
            o["readonly"] = op.readonly;
            break;
        case RemediationOp::Kind::shm_size:
            o["bytes"] = op.bytes;
            break;
        case RemediationOp::Kind::manual:
            o["text"] = op.text;
            break;
    }
    return o;
}

json::value finding_to_json(const Finding& finding) {
    json::object o;
    o["rule"] = finding.rule;
    o["severity"] = to_string(finding.severity);
    o["action"] = to_string(finding.action);
    o["message"] = finding.message;
    json::object evidence;
    for (const auto& [key, value] : finding.evidence) evidence[key] = value;
    o["evidence"] = std::move(evidence);
    json::array remediation;
    for (const auto& op : finding.remediation) remediation.push_back(remediation_to_json(op));
    o["remediation"] = std::move(remediation);
    return o;
}

json::value report_to_json(const Report& report) {
    json::object o;
    o["launchguard"] = LAUNCHGUARD_VERSION;
    json::object profile;
    profile["name"] = report.profile;
    profile["origin"] = report.profile_origin;
    o["profile"] = std::move(profile);
    o["mode"] = to_string(report.mode);
    o["decision"] = to_string(report.decision);
    o["rules_evaluated"] = report.rules_evaluated;
    json::array findings;
    for (const auto& f : report.findings) findings.push_back(finding_to_json(f));
    o["findings"] = std::move(findings);
    json::array patch;
    for (const auto& op : report.patch) patch.push_back(remediation_to_json(op));
    o["patch"] = std::move(patch);
    auto rule_reasons = [](const std::vector<Unknown>& list) {
        json::array out;
        for (const auto& u : list) out.push_back(json::object{{"rule", u.rule}, {"reason", u.reason}});
        return out;
    };
    o["unknown"] = rule_reasons(report.unknowns);
    if (!report.not_applicable.empty()) o["not_applicable"] = rule_reasons(report.not_applicable);
    return o;
}

namespace {

void pretty(std::string& out, const json::value& v, int indent) {
    const std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
    const std::string inner(static_cast<std::size_t>(indent + 1) * 2, ' ');
    if (v.is_object()) {
        const auto& obj = v.get_object();
        if (obj.empty()) {
            out += "{}";
            return;
        }
        out += "{\n";
        bool first = true;
        for (const auto& kv : obj) {
            if (!first) out += ",\n";
            first = false;
            out += inner + json::serialize(json::value(valid_utf8(kv.key()))) + ": ";
            pretty(out, kv.value(), indent + 1);
        }
        out += "\n" + pad + "}";
    } else if (v.is_array()) {
        const auto& arr = v.get_array();
        if (arr.empty()) {
            out += "[]";
            return;
        }
        out += "[\n";
        bool first = true;
        for (const auto& item : arr) {
            if (!first) out += ",\n";
            first = false;
            out += inner;
            pretty(out, item, indent + 1);
        }
        out += "\n" + pad + "]";
    } else if (v.is_string()) {
        // boost::json copies string bytes as they are; strings from the
        // launch (env values, paths, topology attributes) may not be UTF-8,
        // and the output must always be valid JSON.
        out += json::serialize(json::value(valid_utf8(v.get_string())));
    } else {
        out += json::serialize(v);
    }
}

}  // namespace

std::string pretty_json(const json::value& value) {
    std::string out;
    pretty(out, value, 0);
    out += "\n";
    return out;
}

std::string render_json(const Report& report) { return pretty_json(report_to_json(report)); }

}  // namespace launchguard
