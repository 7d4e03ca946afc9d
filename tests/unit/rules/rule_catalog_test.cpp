// The rule catalog as one table: every rule in registry order, with its
// default action and the contexts where it can decide. docs/rules.md is
// generated from the same registry and pinned by the CLI tests; this table is
// what a reviewer reads when a rule is added, moved or changes its default.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rules/rule.h"

namespace launchguard {
namespace {

struct CatalogEntry {
    std::string id;
    Action action;
    std::string contexts;  // scope_letters: L live, N node, K Kubernetes, C CLI

    bool operator==(const CatalogEntry&) const = default;
};

void PrintTo(const CatalogEntry& e, std::ostream* os) {
    *os << e.id << " " << to_string(e.action) << " [" << e.contexts << "]";
}

const std::vector<CatalogEntry> kCatalog = {
    {"topo.file-missing", Action::block, "L K C"},
    {"topo.not-propagated", Action::block, "L K C"},
    {"topo.silently-ignored", Action::block, "L K C"},
    {"topo.nccl-rejects", Action::block, "L C"},
    {"topo.busid-drift", Action::block, "L N C"},
    {"topo.numa-drift", Action::block, "L N C"},
    {"topo.required", Action::block, "L K C"},
    {"conf.host-not-visible", Action::block, "L C"},
    {"conf.lint", Action::warn, "L K C"},
    {"net.hca-matches-nothing", Action::block, "L N C"},
    {"net.ib-disabled", Action::block, "L K C"},
    {"net.fallback-unguarded", Action::warn, "L K C"},
    {"net.plugin-missing", Action::block, "L C"},
    {"net.qps-low", Action::patch, "L K C"},
    {"net.socket-ifname-nomatch", Action::block, "L C"},
    {"net.ib-port-degraded", Action::block, "L N C"},
    {"net.gdr-level-low", Action::warn, "L K C"},
    {"net.gdr-read-off", Action::warn, "L K C"},
    {"net.gdr-unavailable", Action::block, "L N C"},
    {"net.verbs-missing", Action::block, "L C"},
    {"net.imex-channel-missing", Action::block, "L C"},
    {"nccl.p2p-disabled", Action::warn, "L K C"},
    {"nccl.shm-disabled", Action::warn, "L K C"},
    {"nccl.nvls-disabled", Action::warn, "L K C"},
    {"nccl.cumem-disabled", Action::warn, "L K C"},
    {"nccl.algo-restricted", Action::warn, "L K C"},
    {"nccl.proto-restricted", Action::warn, "L K C"},
    {"nccl.channels-capped", Action::warn, "L K C"},
    {"nccl.buffsize-suspicious", Action::warn, "L K C"},
    {"nccl.debug-verbose", Action::warn, "L K C"},
    {"nccl.version-old", Action::warn, "L C"},
    {"cpu.affinity-off-gpu", Action::block, "L C"},
    {"cpu.affinity-partial", Action::warn, "L C"},
    {"cpu.bind-by-id", Action::warn, "L C"},
    {"cpu.k8s-not-pinnable", Action::warn, "K"},
    {"power.governor", Action::warn, "L N C"},
    {"power.cstates", Action::warn, "L N C"},
    {"power.turbo-off", Action::warn, "L N C"},
    {"numa.balancing-on", Action::warn, "L N C"},
    {"virt.iommu-translating", Action::warn, "N C"},
    {"virt.iommu-strict", Action::warn, "N C"},
    {"virt.page-size", Action::warn, "L N C"},
    {"virt.ats-off", Action::block, "N C"},
    {"hw.pcie-degraded", Action::block, "L N C"},
    {"hw.inventory", Action::block, "N C"},
    {"hw.pcie-acs-p2p", Action::block, "N C"},
    {"shm.small", Action::patch, "L K C"},
    {"mem.memlock", Action::warn, "L K C"},
    {"mem.nofile-low", Action::warn, "L C"},
    {"net.gdr-path-off", Action::warn, "L N C"},
    {"topo.nic-uneven", Action::warn, "L N C"},
    {"topo.p2p-off", Action::warn, "L N C"},
    {"net.gdr-iommu-groups", Action::warn, "L N C"},
};

TEST(RuleCatalog, RegistryOrderDefaultsAndContextsMatchTheTable) {
    std::vector<CatalogEntry> registered;
    for (const Rule* rule : all_rules()) {
        const RuleInfo& info = rule->info();
        registered.push_back({std::string(info.id), info.default_action, scope_letters(info.scopes)});
    }
    EXPECT_EQ(registered, kCatalog);
}

TEST(RuleCatalog, EveryRuleDocumentsItselfAndBlocksAreErrors) {
    for (const Rule* rule : all_rules()) {
        const RuleInfo& info = rule->info();
        EXPECT_FALSE(info.title.empty() || info.checks.empty() || info.why.empty() || info.evidence.empty() ||
                     info.fix.empty())
            << info.id;
        EXPECT_EQ(info.severity, info.default_action == Action::block ? Severity::error : Severity::warning) << info.id;
        EXPECT_EQ(find_rule(info.id), rule) << info.id;
    }
}

}  // namespace
}  // namespace launchguard
