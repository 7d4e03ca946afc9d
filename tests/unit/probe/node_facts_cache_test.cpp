#include "probe/node_facts_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>

#include "probe/context_builder.h"
#include "support/shared_fixtures.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

// Eight CPUs in three kinds: 0-5 alike, 6 with its deep state disabled, 7
// without cpufreq (no governor or frequencies) but with idle states.
CpuPower eight_cpus() {
    CpuPower power;
    const std::vector<CpuPower::IdleState> states{{"POLL", false}, {"C1", false}, {"C1E", false}, {"C6", false}};
    for (unsigned cpu = 0; cpu < 8; ++cpu) {
        if (cpu < 7) {
            power.governor[cpu] = "performance";
            power.scaling_max_khz[cpu] = 3'800'000;
            power.cpuinfo_max_khz[cpu] = 3'800'000;
        }
        power.idle_states[cpu] = states;
    }
    power.idle_states[6][3].disabled = true;
    power.intel_no_turbo = false;
    return power;
}

void expect_same_power(const CpuPower& a, const CpuPower& b) {
    EXPECT_EQ(a.governor, b.governor);
    EXPECT_EQ(a.scaling_max_khz, b.scaling_max_khz);
    EXPECT_EQ(a.cpuinfo_max_khz, b.cpuinfo_max_khz);
    EXPECT_EQ(a.intel_no_turbo, b.intel_no_turbo);
    EXPECT_EQ(a.cpufreq_boost, b.cpufreq_boost);
    ASSERT_EQ(a.idle_states.size(), b.idle_states.size());
    for (const auto& [cpu, states] : a.idle_states) {
        const auto& other = b.idle_states.at(cpu);
        ASSERT_EQ(states.size(), other.size()) << "cpu " << cpu;
        for (std::size_t k = 0; k < states.size(); ++k) {
            EXPECT_EQ(states[k].name, other[k].name) << "cpu " << cpu << " state " << k;
            EXPECT_EQ(states[k].disabled, other[k].disabled) << "cpu " << cpu << " state " << k;
        }
    }
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
    return n;
}

const NodeFactsCacheKey kLiveTask{"/", NodeFactSet::task};

CachedNodeFacts power_only(Fact<CpuPower> power) {
    CachedNodeFacts facts;
    facts.power = std::move(power);
    return facts;
}

TEST(NodeFactsCache, CpusWithTheSameSettingsShareAGroupAndComeBackTheSame) {
    const auto fact = Fact<CpuPower>::known(eight_cpus(), "/sys/devices/system/cpu");
    const std::string text = node_facts_cache_to_json(power_only(fact), kLiveTask, "boot-1");
    EXPECT_EQ(count(text, "\"cpus\""), 3U) << text;
    EXPECT_NE(text.find("\"0-5\""), std::string::npos) << text;

    auto back = node_facts_cache_from_json(text, kLiveTask, "boot-1", "/run/launchguard/node-facts.json");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    ASSERT_TRUE(back->power.is_known());
    expect_same_power(*fact, back->power.value());
    EXPECT_EQ(back->power.source(), "/sys/devices/system/cpu, cached in /run/launchguard/node-facts.json");
}

TEST(NodeFactsCache, AnUnknownFactKeepsItsReason) {
    const auto fact = Fact<CpuPower>::unknown("no cpufreq, cpuidle or turbo settings (common in VMs)");
    auto back = node_facts_cache_from_json(node_facts_cache_to_json(power_only(fact), kLiveTask, "b"), kLiveTask, "b",
                                           "node-facts.json");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_FALSE(back->power.is_known());
    EXPECT_EQ(back->power.reason(), fact.reason());
}

TEST(NodeFactsCache, ServesOnlyTheSameBootRootAndAsMuchAsIsAsked) {
    const auto fact = Fact<CpuPower>::known(eight_cpus(), "cpu");
    const std::string task = node_facts_cache_to_json(power_only(fact), kLiveTask, "boot-1");
    auto other_boot = node_facts_cache_from_json(task, kLiveTask, "boot-2", "p.json");
    ASSERT_FALSE(other_boot.ok());
    EXPECT_NE(other_boot.error().to_string().find("another boot"), std::string::npos);
    EXPECT_FALSE(node_facts_cache_from_json(task, kLiveTask, "", "p.json").ok());

    auto other_root =
        node_facts_cache_from_json(task, NodeFactsCacheKey{"/fixture", NodeFactSet::task}, "boot-1", "p.json");
    ASSERT_FALSE(other_root.ok());
    EXPECT_NE(other_root.error().to_string().find("read under /, not /fixture"), std::string::npos);

    // A task's read leaves the shallow states' switches out: it cannot serve a node check.
    auto all_from_task = node_facts_cache_from_json(task, NodeFactsCacheKey{"/", NodeFactSet::all}, "boot-1", "p.json");
    ASSERT_FALSE(all_from_task.ok());
    EXPECT_NE(all_from_task.error().to_string().find("'task'"), std::string::npos);
    const std::string all =
        node_facts_cache_to_json(power_only(fact), NodeFactsCacheKey{"/", NodeFactSet::all}, "boot-1");
    EXPECT_TRUE(node_facts_cache_from_json(all, kLiveTask, "boot-1", "p.json").ok());
}

TEST(NodeFactsCache, ADamagedFileIsAnErrorNamingItNeverACrash) {
    const std::string good =
        node_facts_cache_to_json(power_only(Fact<CpuPower>::known(eight_cpus(), "cpu")), kLiveTask, "b");
    const std::string head = R"({"version":1,"boot_id":"b","sysfs_root":"/","set":"task",)";
    const std::vector<std::string> damaged{
        "",
        good.substr(0, good.size() / 2),
        "[]",
        R"({"version":2,"boot_id":"b","sysfs_root":"/","set":"task","power":{"known":false,"reason":"r"}})",
        head + R"("power":{"known":true,"source":"s","groups":{}}})",
        head + R"("power":{"known":true,"source":"s","groups":[{"cpus":"3-1"}]}})",
        head + R"("power":{"known":true,"source":"s","groups":[{"cpus":"0","scaling_max_khz":"fast"}]}})",
        head + R"("power":{"known":true,"source":"s","groups":[{"cpus":"0","idle_states":[{"name":"C1"}]}]}})",
        head + R"("power":{"known":false}})",
        head + R"("power":{"known":false,"reason":"r"},"pcie_links":{"known":true,"source":"s","read_for":[]}})",
        head + R"("power":{"known":false,"reason":"r"},"pcie_links":{"known":true,"source":"s","read_for":[],)"
               R"("records":{"0000:03:00.0":{"current":[16.0],"max":[16.0,16]}}}})",
        R"({"version":1,"boot_id":"b","sysfs_root":"/","set":"some","power":{"known":false,"reason":"r"}})",
    };
    for (const auto& text : damaged) {
        auto parsed = node_facts_cache_from_json(text, kLiveTask, "b", "/run/launchguard/node-facts.json");
        ASSERT_FALSE(parsed.ok()) << text;
        EXPECT_NE(parsed.error().to_string().find("/run/launchguard/node-facts.json"), std::string::npos) << text;
    }
}

void set_mtime(const std::string& path, std::time_t when) {
    const struct timespec times[2] = {{when, 0}, {when, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(NodeFactsCache, AFileIsFreshForItsMaximumAgeAndNotAfter) {
    if (current_boot_id().empty()) GTEST_SKIP() << "no /proc/sys/kernel/random/boot_id here";
    test::TempTree tree;
    const std::string path = tree.path("cache/node-facts.json");  // the directory is created
    const auto fact = Fact<CpuPower>::known(eight_cpus(), "cpu");
    ASSERT_TRUE(save_node_facts_cache(path, power_only(fact), kLiveTask).ok());
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644U);

    auto fresh = load_fresh_node_facts_cache(path, kLiveTask, 60);
    ASSERT_TRUE(fresh.has_value());
    expect_same_power(*fact, fresh->power.value());
    EXPECT_FALSE(load_fresh_node_facts_cache(path, kLiveTask, 0).has_value());
    EXPECT_FALSE(load_fresh_node_facts_cache(path, NodeFactsCacheKey{"/other", NodeFactSet::task}, 60).has_value());

    const std::time_t now = std::time(nullptr);
    set_mtime(path, now - 120);
    EXPECT_FALSE(load_fresh_node_facts_cache(path, kLiveTask, 60).has_value());
    EXPECT_TRUE(load_fresh_node_facts_cache(path, kLiveTask, 300).has_value());
    set_mtime(path, now + 600);  // the clock was set back since it was written
    EXPECT_FALSE(load_fresh_node_facts_cache(path, kLiveTask, 3600).has_value());
    EXPECT_FALSE(load_fresh_node_facts_cache(tree.path("cache/absent.json"), kLiveTask, 60).has_value());
    EXPECT_FALSE(load_fresh_node_facts_cache(tree.path("cache"), kLiveTask, 60).has_value());  // a directory
}

TEST(NodeFactsCache, ASaveThatCannotWriteIsAnErrorNamingTheFile) {
    test::TempTree tree;
    tree.write("file", "x");
    auto saved = save_node_facts_cache(tree.path("file/node-facts.json"), power_only(Fact<CpuPower>::unknown("none")),
                                       kLiveTask);
    ASSERT_FALSE(saved.ok());
    EXPECT_NE(saved.error().to_string().find(tree.path("file/node-facts.json")), std::string::npos);
}

// Two CPUs, each with a governor and four idle states.
void write_cpus(const test::TempTree& tree, const std::string& governor) {
    const char* names[] = {"POLL", "C1", "C1E", "C6"};
    for (int cpu = 0; cpu < 2; ++cpu) {
        const std::string base = "sys/devices/system/cpu/cpu" + std::to_string(cpu);
        tree.write(base + "/cpufreq/scaling_governor", governor + "\n");
        for (int k = 0; k < 4; ++k) {
            const std::string state = base + "/cpuidle/state" + std::to_string(k);
            tree.write(state + "/name", std::string(names[k]) + "\n");
            tree.write(state + "/disable", "0\n");
        }
    }
}

TEST(NodeFactsCache, ANodeSnapshotTakesTheCachedSettingsWhileTheyAreFresh) {
    if (current_boot_id().empty()) GTEST_SKIP() << "no /proc/sys/kernel/random/boot_id here";
    test::TempTree node;
    test::TempTree cache;
    write_cpus(node, "powersave");
    ProbeOptions o;
    o.root = node.root();
    o.sysfs_root = node.root();
    o.live_topology = false;
    o.task_facts_only = true;
    o.node_facts_cache = cache.path("node-facts.json");
    o.node_facts_max_age = 60;
    EXPECT_EQ(node_facts_cache_key(o).sysfs_root, node.root());
    EXPECT_EQ(node_facts_cache_key(o).set, NodeFactSet::task);

    // Nothing cached yet: read from sysfs, and the probe writes nothing itself.
    auto first = probe_node_snapshot(o);
    ASSERT_TRUE(first.ok()) << first.error().to_string();
    EXPECT_FALSE(first->node_facts_from_cache);
    ASSERT_TRUE(first->node.power.is_known());
    EXPECT_EQ(first->node.power->governor.at(1), "powersave");
    EXPECT_EQ(first->node.power->idle_states.at(1).size(), 4U);
    EXPECT_EQ(first->node.power.source().find("cached"), std::string::npos);
    EXPECT_FALSE(probe_node_snapshot(o)->node_facts_from_cache);
    ASSERT_TRUE(save_node_facts_cache(*o.node_facts_cache, cacheable_node_facts(*first), node_facts_cache_key(o)).ok());

    // An administrator sets the governor: reads within the maximum age still
    // see what was saved, and say where it came from.
    write_cpus(node, "performance");
    auto second = probe_node_snapshot(o);
    ASSERT_TRUE(second.ok());
    EXPECT_TRUE(second->node_facts_from_cache);
    EXPECT_EQ(second->node.power->governor.at(1), "powersave");
    EXPECT_NE(second->node.power.source().find("cached in " + cache.path("node-facts.json")), std::string::npos);
    // A context built without a snapshot takes the cache the same way.
    auto context = build_context(o);
    ASSERT_TRUE(context.ok()) << context.error().to_string();
    EXPECT_EQ(context->node.power->governor.at(1), "powersave");

    // Older than the maximum age: read again.
    set_mtime(cache.path("node-facts.json"), std::time(nullptr) - 61);
    auto third = probe_node_snapshot(o);
    ASSERT_TRUE(third.ok());
    EXPECT_FALSE(third->node_facts_from_cache);
    EXPECT_EQ(third->node.power->governor.at(1), "performance");

    // Without a maximum age the cache is not read.
    ASSERT_TRUE(save_node_facts_cache(*o.node_facts_cache, cacheable_node_facts(*first), node_facts_cache_key(o)).ok());
    o.node_facts_max_age = 0;
    auto uncached = probe_node_snapshot(o);
    EXPECT_FALSE(uncached->node_facts_from_cache);
    EXPECT_EQ(uncached->node.power->governor.at(1), "performance");
}

TEST(NodeFactsCache, LinksComeBackForTheDevicesTheyWereReadFor) {
    CachedNodeFacts facts = power_only(Fact<CpuPower>::unknown("none"));
    std::map<std::string, PcieLinkRecord> records;
    records["0000:03:00.0"] = PcieLinkRecord{"0000:03:00.0", PcieLink{8.0, 8}, PcieLink{16.0, 16}};
    facts.pcie_links = Fact<std::map<std::string, PcieLinkRecord>>::known(records, "/sys/bus/pci/devices");
    facts.link_busids = {"0000:03:00.0", "0000:04:00.0"};  // 04:00.0 has no link attributes
    auto back = node_facts_cache_from_json(node_facts_cache_to_json(facts, kLiveTask, "b"), kLiveTask, "b", "c.json");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    ASSERT_TRUE(back->pcie_links.has_value() && back->pcie_links->is_known());
    const auto& link = back->pcie_links->value().at("0000:03:00.0");
    EXPECT_EQ(link.current.width, 8);
    EXPECT_DOUBLE_EQ(link.current.speed_gts, 8.0);
    EXPECT_EQ(link.max.width, 16);
    EXPECT_EQ(back->pcie_links->value().count("0000:04:00.0"), 0U);
    EXPECT_EQ(back->pcie_links->source(), "/sys/bus/pci/devices, cached in c.json");
    EXPECT_TRUE(back->links_cover({"0000:04:00.0", "0000:03:00.0"}));
    EXPECT_TRUE(back->links_cover({"0000:03:00.0"}));
    EXPECT_FALSE(back->links_cover({"0000:03:00.0", "0000:83:00.0"}));

    // Without links, none come back; an unknown keeps its reason.
    EXPECT_FALSE(node_facts_cache_from_json(node_facts_cache_to_json(power_only(facts.power), kLiveTask, "b"),
                                            kLiveTask, "b", "c.json")
                     ->pcie_links.has_value());
    facts.pcie_links = Fact<std::map<std::string, PcieLinkRecord>>::unknown("no sys/bus/pci/devices");
    auto unknown = node_facts_cache_from_json(node_facts_cache_to_json(facts, kLiveTask, "b"), kLiveTask, "b", "c");
    ASSERT_TRUE(unknown.ok());
    EXPECT_EQ(unknown->pcie_links->reason(), "no sys/bus/pci/devices");
}

// The Slurm integration fixture: an hwloc XML of 3 GPUs and an mlx5 NIC, and
// its sysfs tree (GPU 0000:03:00.0 trained at x8 of x16).
ProbeOptions fixture_task(const test::TempTree& sysfs, const test::TempTree& cache) {
    ProbeOptions o;
    o.root = sysfs.root();
    o.sysfs_root = sysfs.root();
    o.hwloc_xml = testing::shared_fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml");
    o.task_facts_only = true;
    o.node_facts_cache = cache.path("node-facts.json");
    o.node_facts_max_age = 60;
    return o;
}

int gpu_link_width(const NodeSnapshot& snapshot, const std::string& busid) {
    const Gpu* gpu = snapshot.topology->gpu_by_busid(busid);
    return gpu != nullptr && gpu->link.current ? gpu->link.current->width : -1;
}

TEST(NodeFactsCache, ATaskTakesTheGpusAndNicsLinksFromTheCacheWhileItCoversThem) {
    if (current_boot_id().empty()) GTEST_SKIP() << "no /proc/sys/kernel/random/boot_id here";
    test::TempTree sysfs;
    test::TempTree cache;
    std::filesystem::copy(LAUNCHGUARD_FIXTURES "/sysfs/kvm-guest-2n", sysfs.root(),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    ProbeOptions o = fixture_task(sysfs, cache);
    const std::string width = "sys/bus/pci/devices/0000:03:00.0/current_link_width";

    auto first = probe_node_snapshot(o);
    ASSERT_TRUE(first.ok()) << first.error().to_string();
    ASSERT_TRUE(first->topology.is_known() && first->node.pcie_links.is_known());
    EXPECT_EQ(gpu_link_width(*first, "0000:03:00.0"), 8);
    const CachedNodeFacts saved = cacheable_node_facts(*first);
    ASSERT_TRUE(saved.pcie_links.has_value());
    EXPECT_TRUE(saved.links_cover({"0000:03:00.0", "0000:83:00.0", "0000:84:00.0", "0000:04:00.0"}));
    ASSERT_TRUE(save_node_facts_cache(*o.node_facts_cache, saved, node_facts_cache_key(o)).ok());

    // The link retrains at full width: a step within the maximum age still
    // sees the width the cache holds, and the topology says so too.
    sysfs.write(width, "16\n");
    auto cached = probe_node_snapshot(o);
    ASSERT_TRUE(cached.ok());
    EXPECT_TRUE(cached->node_facts_from_cache);
    EXPECT_EQ(gpu_link_width(*cached, "0000:03:00.0"), 8);
    EXPECT_NE(cached->node.pcie_links.source().find("cached in"), std::string::npos);

    // A cache read for fewer devices than the topology has is not enough:
    // the links are read again, all of them.
    CachedNodeFacts partial = saved;
    partial.link_busids = {"0000:03:00.0"};
    ASSERT_TRUE(save_node_facts_cache(*o.node_facts_cache, partial, node_facts_cache_key(o)).ok());
    auto reread = probe_node_snapshot(o);
    ASSERT_TRUE(reread.ok());
    EXPECT_FALSE(reread->node_facts_from_cache);
    EXPECT_EQ(gpu_link_width(*reread, "0000:03:00.0"), 16);
    EXPECT_EQ(reread->node.pcie_links.source().find("cached"), std::string::npos);
}

}  // namespace
}  // namespace launchguard
