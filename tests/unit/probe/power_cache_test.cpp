#include "probe/power_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <ctime>

#include "probe/context_builder.h"
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

const PowerCacheKey kLiveTask{"/", NodeFactSet::task};

TEST(PowerCache, CpusWithTheSameSettingsShareAGroupAndComeBackTheSame) {
    const auto fact = Fact<CpuPower>::known(eight_cpus(), "/sys/devices/system/cpu");
    const std::string text = power_cache_to_json(fact, kLiveTask, "boot-1");
    EXPECT_EQ(count(text, "\"cpus\""), 3U) << text;
    EXPECT_NE(text.find("\"0-5\""), std::string::npos) << text;

    auto back = power_cache_from_json(text, kLiveTask, "boot-1", "/run/launchguard/power.json");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    ASSERT_TRUE(back->is_known());
    expect_same_power(*fact, back->value());
    EXPECT_EQ(back->source(), "/sys/devices/system/cpu, cached in /run/launchguard/power.json");
}

TEST(PowerCache, AnUnknownFactKeepsItsReason) {
    const auto fact = Fact<CpuPower>::unknown("no cpufreq, cpuidle or turbo settings (common in VMs)");
    auto back = power_cache_from_json(power_cache_to_json(fact, kLiveTask, "b"), kLiveTask, "b", "power.json");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_FALSE(back->is_known());
    EXPECT_EQ(back->reason(), fact.reason());
}

TEST(PowerCache, ServesOnlyTheSameBootRootAndAsMuchAsIsAsked) {
    const auto fact = Fact<CpuPower>::known(eight_cpus(), "cpu");
    const std::string task = power_cache_to_json(fact, kLiveTask, "boot-1");
    auto other_boot = power_cache_from_json(task, kLiveTask, "boot-2", "p.json");
    ASSERT_FALSE(other_boot.ok());
    EXPECT_NE(other_boot.error().to_string().find("another boot"), std::string::npos);
    EXPECT_FALSE(power_cache_from_json(task, kLiveTask, "", "p.json").ok());

    auto other_root = power_cache_from_json(task, PowerCacheKey{"/fixture", NodeFactSet::task}, "boot-1", "p.json");
    ASSERT_FALSE(other_root.ok());
    EXPECT_NE(other_root.error().to_string().find("read under /, not /fixture"), std::string::npos);

    // A task's read leaves the shallow states' switches out: it cannot serve a node check.
    auto all_from_task = power_cache_from_json(task, PowerCacheKey{"/", NodeFactSet::all}, "boot-1", "p.json");
    ASSERT_FALSE(all_from_task.ok());
    EXPECT_NE(all_from_task.error().to_string().find("'task'"), std::string::npos);
    const std::string all = power_cache_to_json(fact, PowerCacheKey{"/", NodeFactSet::all}, "boot-1");
    EXPECT_TRUE(power_cache_from_json(all, kLiveTask, "boot-1", "p.json").ok());
}

TEST(PowerCache, ADamagedFileIsAnErrorNamingItNeverACrash) {
    const std::string good = power_cache_to_json(Fact<CpuPower>::known(eight_cpus(), "cpu"), kLiveTask, "b");
    const std::vector<std::string> damaged{
        "",
        good.substr(0, good.size() / 2),
        "[]",
        R"({"version":2,"boot_id":"b","sysfs_root":"/","set":"task","known":true})",
        R"({"version":1,"boot_id":"b","sysfs_root":"/","set":"task","known":true,"source":"s","groups":{}})",
        R"({"version":1,"boot_id":"b","sysfs_root":"/","set":"task","known":true,"source":"s","groups":[{"cpus":"3-1"}]})",
        R"({"version":1,"boot_id":"b","sysfs_root":"/","set":"task","known":true,"source":"s","groups":[{"cpus":"0","scaling_max_khz":"fast"}]})",
        R"({"version":1,"boot_id":"b","sysfs_root":"/","set":"task","known":true,"source":"s","groups":[{"cpus":"0","idle_states":[{"name":"C1"}]}]})",
        R"({"version":1,"boot_id":"b","sysfs_root":"/","set":"some","known":true,"source":"s","groups":[]})",
    };
    for (const auto& text : damaged) {
        auto parsed = power_cache_from_json(text, kLiveTask, "b", "/run/launchguard/power.json");
        ASSERT_FALSE(parsed.ok()) << text;
        EXPECT_NE(parsed.error().to_string().find("/run/launchguard/power.json"), std::string::npos) << text;
    }
}

void set_mtime(const std::string& path, std::time_t when) {
    const struct timespec times[2] = {{when, 0}, {when, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(PowerCache, AFileIsFreshForItsMaximumAgeAndNotAfter) {
    if (current_boot_id().empty()) GTEST_SKIP() << "no /proc/sys/kernel/random/boot_id here";
    test::TempTree tree;
    const std::string path = tree.path("cache/power.json");  // the directory is created
    const auto fact = Fact<CpuPower>::known(eight_cpus(), "cpu");
    ASSERT_TRUE(save_power_cache(path, fact, kLiveTask).ok());
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644U);

    auto fresh = load_fresh_power_cache(path, kLiveTask, 60);
    ASSERT_TRUE(fresh.has_value());
    expect_same_power(*fact, fresh->value());
    EXPECT_FALSE(load_fresh_power_cache(path, kLiveTask, 0).has_value());
    EXPECT_FALSE(load_fresh_power_cache(path, PowerCacheKey{"/other", NodeFactSet::task}, 60).has_value());

    const std::time_t now = std::time(nullptr);
    set_mtime(path, now - 120);
    EXPECT_FALSE(load_fresh_power_cache(path, kLiveTask, 60).has_value());
    EXPECT_TRUE(load_fresh_power_cache(path, kLiveTask, 300).has_value());
    set_mtime(path, now + 600);  // the clock was set back since it was written
    EXPECT_FALSE(load_fresh_power_cache(path, kLiveTask, 3600).has_value());
    EXPECT_FALSE(load_fresh_power_cache(tree.path("cache/absent.json"), kLiveTask, 60).has_value());
    EXPECT_FALSE(load_fresh_power_cache(tree.path("cache"), kLiveTask, 60).has_value());  // a directory
}

TEST(PowerCache, ASaveThatCannotWriteIsAnErrorNamingTheFile) {
    test::TempTree tree;
    tree.write("file", "x");
    auto saved = save_power_cache(tree.path("file/power.json"), Fact<CpuPower>::unknown("none"), kLiveTask);
    ASSERT_FALSE(saved.ok());
    EXPECT_NE(saved.error().to_string().find(tree.path("file/power.json")), std::string::npos);
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

TEST(PowerCache, ANodeSnapshotTakesTheCachedSettingsWhileTheyAreFresh) {
    if (current_boot_id().empty()) GTEST_SKIP() << "no /proc/sys/kernel/random/boot_id here";
    test::TempTree node;
    test::TempTree cache;
    write_cpus(node, "powersave");
    ProbeOptions o;
    o.root = node.root();
    o.sysfs_root = node.root();
    o.live_topology = false;
    o.task_facts_only = true;
    o.power_cache = cache.path("power.json");
    o.power_cache_max_age = 60;
    EXPECT_EQ(power_cache_key(o).sysfs_root, node.root());
    EXPECT_EQ(power_cache_key(o).set, NodeFactSet::task);

    // Nothing cached yet: read from sysfs, and the probe writes nothing itself.
    auto first = probe_node_snapshot(o);
    ASSERT_TRUE(first.ok()) << first.error().to_string();
    EXPECT_FALSE(first->power_from_cache);
    ASSERT_TRUE(first->node.power.is_known());
    EXPECT_EQ(first->node.power->governor.at(1), "powersave");
    EXPECT_EQ(first->node.power->idle_states.at(1).size(), 4U);
    EXPECT_EQ(first->node.power.source().find("cached"), std::string::npos);
    EXPECT_FALSE(probe_node_snapshot(o)->power_from_cache);
    ASSERT_TRUE(save_power_cache(*o.power_cache, first->node.power, power_cache_key(o)).ok());

    // An administrator sets the governor: reads within the maximum age still
    // see what was saved, and say where it came from.
    write_cpus(node, "performance");
    auto second = probe_node_snapshot(o);
    ASSERT_TRUE(second.ok());
    EXPECT_TRUE(second->power_from_cache);
    EXPECT_EQ(second->node.power->governor.at(1), "powersave");
    EXPECT_NE(second->node.power.source().find("cached in " + cache.path("power.json")), std::string::npos);
    // A context built without a snapshot takes the cache the same way.
    auto context = build_context(o);
    ASSERT_TRUE(context.ok()) << context.error().to_string();
    EXPECT_EQ(context->node.power->governor.at(1), "powersave");

    // Older than the maximum age: read again.
    set_mtime(cache.path("power.json"), std::time(nullptr) - 61);
    auto third = probe_node_snapshot(o);
    ASSERT_TRUE(third.ok());
    EXPECT_FALSE(third->power_from_cache);
    EXPECT_EQ(third->node.power->governor.at(1), "performance");

    // Without a maximum age the cache is not read.
    ASSERT_TRUE(save_power_cache(*o.power_cache, first->node.power, power_cache_key(o)).ok());
    o.power_cache_max_age = 0;
    auto uncached = probe_node_snapshot(o);
    EXPECT_FALSE(uncached->power_from_cache);
    EXPECT_EQ(uncached->node.power->governor.at(1), "performance");
}

}  // namespace
}  // namespace launchguard
