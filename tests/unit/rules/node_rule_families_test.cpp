// The cpu.*, power.*, numa.*, virt.*, hw.*, shm.* and mem.* rules as the
// catalog lists them: id order, default action and contexts are pinned here,
// so that changing one is a deliberate edit of this list (and of
// docs/rules.md), and every rule documents itself.
#include <gtest/gtest.h>

#include <algorithm>

#include "rules/rule.h"

namespace launchguard {
namespace {

struct Expected {
    const char* id;
    Action action;
    unsigned scopes;
};

constexpr unsigned kNLC = kScopeNode | kScopeLive | kScopeCli;
constexpr unsigned kLC = kScopeLive | kScopeCli;
constexpr unsigned kNC = kScopeNode | kScopeCli;
constexpr unsigned kLKC = kScopeLive | kScopeKubernetes | kScopeCli;

TEST(NodeRuleFamilies, AreRegisteredInCatalogOrderWithTheirDefaultsAndContexts) {
    const Expected expected[] = {
        {"cpu.affinity-off-gpu", Action::block, kLC},  {"cpu.affinity-partial", Action::warn, kLC},
        {"cpu.bind-by-id", Action::warn, kLC},         {"cpu.k8s-not-pinnable", Action::warn, kScopeKubernetes},
        {"power.governor", Action::warn, kNLC},        {"power.cstates", Action::warn, kNLC},
        {"power.turbo-off", Action::warn, kNLC},       {"numa.balancing-on", Action::warn, kNLC},
        {"virt.iommu-translating", Action::warn, kNC}, {"virt.iommu-strict", Action::warn, kNC},
        {"virt.page-size", Action::warn, kNLC},        {"hw.pcie-degraded", Action::block, kNLC},
        {"hw.inventory", Action::block, kNC},          {"shm.small", Action::patch, kLKC},
        {"mem.memlock", Action::warn, kLKC},
    };
    const auto& rules = all_rules();
    auto it = std::find_if(rules.begin(), rules.end(), [&](const Rule* r) { return r->info().id == expected[0].id; });
    for (const auto& e : expected) {
        ASSERT_NE(it, rules.end()) << e.id;
        const RuleInfo& info = (*it)->info();
        EXPECT_EQ(info.id, e.id);
        EXPECT_EQ(info.default_action, e.action) << e.id;
        EXPECT_EQ(info.scopes, e.scopes) << e.id;
        EXPECT_EQ(info.severity, e.action == Action::block ? Severity::error : Severity::warning) << e.id;
        EXPECT_FALSE(info.title.empty() || info.checks.empty() || info.why.empty() || info.evidence.empty() ||
                     info.fix.empty())
            << e.id;
        ++it;
    }
}

}  // namespace
}  // namespace launchguard
