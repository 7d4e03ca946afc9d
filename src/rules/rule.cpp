#include "rules/rule.h"

#include <algorithm>

namespace launchguard {

std::string scope_letters(unsigned scopes) {
    std::string out;
    auto add = [&](unsigned bit, const char* letter) {
        if ((scopes & bit) == 0) return;
        if (!out.empty()) out += ' ';
        out += letter;
    };
    add(kScopeLive, "L");
    add(kScopeNode, "N");
    add(kScopeKubernetes, "K");
    add(kScopeCli, "C");
    return out;
}

Finding& RuleOutput::fire(std::string message) {
    Finding finding;
    finding.rule = std::string(info_.id);
    finding.severity = info_.severity;
    finding.action = info_.default_action;
    finding.message = std::move(message);
    findings_.push_back(std::move(finding));
    return findings_.back();
}

void RuleOutput::unknown(std::string reason) { unknowns_.push_back({std::string(info_.id), std::move(reason)}); }

const Rule* find_rule(std::string_view id) {
    const auto& rules = all_rules();
    auto it = std::find_if(rules.begin(), rules.end(), [&](const Rule* r) { return r->info().id == id; });
    return it == rules.end() ? nullptr : *it;
}

std::vector<const ProfileParameter*> parameters_of(const std::vector<const Rule*>& rules) {
    std::vector<const ProfileParameter*> parameters;
    for (const Rule* rule : rules) {
        for (const ProfileParameter* parameter : rule->info().parameters) {
            // Two rules may read one parameter (the same descriptor).
            if (std::find(parameters.begin(), parameters.end(), parameter) == parameters.end()) {
                parameters.push_back(parameter);
            }
        }
    }
    return parameters;
}

const std::vector<const ProfileParameter*>& all_profile_parameters() {
    static const std::vector<const ProfileParameter*> parameters = parameters_of(all_rules());
    return parameters;
}

}  // namespace launchguard
