#include "support/rule_harness.h"

#include <stdexcept>

#include "engine/profile_loader.h"
#include "nccl/nccl_config.h"
#include "rules/rule.h"

namespace launchguard::testing {

const Finding& RuleResult::finding() const {
    if (findings.size() != 1) {
        throw std::runtime_error("expected exactly one finding, got " + std::to_string(findings.size()));
    }
    return findings.front();
}

std::string RuleResult::evidence(std::string_view key) const {
    for (const auto& [k, v] : finding().evidence) {
        if (k == key) return v;
    }
    return "";
}

std::string RuleResult::set_env(std::string_view name) const {
    for (const auto& f : findings) {
        for (const auto& op : f.remediation) {
            if (op.kind == RemediationOp::Kind::set_env && op.name == name) return op.value;
        }
    }
    return "";
}

bool RuleResult::has_op(RemediationOp::Kind kind) const {
    for (const auto& f : findings) {
        for (const auto& op : f.remediation) {
            if (op.kind == kind) return true;
        }
    }
    return false;
}

RuleResult run_rule(std::string_view id, const LaunchContext& ctx, const Profile& profile) {
    const Rule* rule = find_rule(id);
    if (rule == nullptr) throw std::runtime_error("no rule " + std::string(id));
    return run_rule(*rule, ctx, profile);
}

RuleResult run_rule(const Rule& rule, const LaunchContext& ctx, const Profile& profile) {
    nccl::EffectiveConfig config = nccl::resolve(ctx);
    RuleOutput out(rule.info());
    SharedAnalysis shared;
    rule.evaluate(RuleInput{ctx, profile, config, shared, ctx.files.get()}, out);
    return RuleResult{std::move(out.findings()), std::move(out.unknowns())};
}

RuleResult run_rule(std::string_view id, const LaunchContext& ctx) { return run_rule(id, ctx, default_profile()); }

Profile profile_from_yaml(const std::string& yaml) {
    auto profile = parse_profile(yaml, "inline test profile");
    if (!profile) throw std::runtime_error(profile.error().to_string());
    return profile.value();
}

}  // namespace launchguard::testing
