// One rule = one small unit with its id, default action, the contexts where it
// can decide, and its documentation beside its code. All rules are listed in
// rules/registry.cpp; docs/rules.md is generated from that list.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "context/launch_context.h"
#include "finding/finding.h"
#include "nccl/nccl_config.h"
#include "profile/profile.h"
#include "rules/shared_analysis.h"

namespace launchguard {

// Where a rule can decide (docs/design/RULES.md): L = live task or container,
// N = node / prolog, K = Kubernetes spec, C = CLI on any of these.
enum Scope : unsigned {
    kScopeLive = 1U << 0,
    kScopeNode = 1U << 1,
    kScopeKubernetes = 1U << 2,
    kScopeCli = 1U << 3,
};
std::string scope_letters(unsigned scopes);

struct RuleInfo {
    std::string_view id;     // "topo.file-missing"
    std::string_view title;  // short noun phrase
    Action default_action = Action::warn;
    Severity severity = Severity::warning;
    unsigned scopes = 0;
    // The rule judges NCCL itself (its variables, files, transports): not
    // applicable to a launch whose spec selects another backend (gloo, mpi).
    bool nccl_only = false;
    std::string_view checks;    // what it checks (docs: "What")
    std::string_view why;       // the silent slowdown it prevents (docs: "Why")
    std::string_view evidence;  // what the finding shows (docs: "Evidence")
    std::string_view fix;       // how to fix it (docs: "Fix")
    // The profile parameters (thresholds) it reads, declared beside it as
    // constexpr descriptors (profile/typed_parameter.h): the profile readers
    // learn them from here, so a new one needs no change in src/profile/.
    std::span<const ProfileParameter* const> parameters{};
};

// What a rule sees: the launch, the profile, NCCL's effective config and the
// shared analysis (each computed at most once per evaluation, for every rule).
struct RuleInput {
    const LaunchContext& ctx;
    const Profile& profile;
    const nccl::EffectiveConfig& nccl;
    SharedAnalysis& shared;
    // The task's filesystem view (ctx.files, answering each path once per
    // evaluation); null when the launch has no view. Rules read files here.
    const FileView* files;
};

class RuleOutput {
public:
    explicit RuleOutput(const RuleInfo& info) : info_(info) {}
    // Starts a finding with the rule's id, severity and default action.
    Finding& fire(std::string message);
    void unknown(std::string reason);

    [[nodiscard]] std::vector<Finding>& findings() { return findings_; }
    [[nodiscard]] std::vector<Unknown>& unknowns() { return unknowns_; }

private:
    const RuleInfo& info_;
    std::vector<Finding> findings_;
    std::vector<Unknown> unknowns_;
};

class Rule {
public:
    virtual ~Rule() = default;
    [[nodiscard]] virtual const RuleInfo& info() const = 0;
    virtual void evaluate(const RuleInput& in, RuleOutput& out) const = 0;
};

// Every rule, in catalog order.
const std::vector<const Rule*>& all_rules();
const Rule* find_rule(std::string_view id);
// The profile parameters of `rules`, each once, in catalog order.
std::vector<const ProfileParameter*> parameters_of(const std::vector<const Rule*>& rules);
// Those of every rule: what the profile readers validate.
const std::vector<const ProfileParameter*>& all_profile_parameters();

}  // namespace launchguard
