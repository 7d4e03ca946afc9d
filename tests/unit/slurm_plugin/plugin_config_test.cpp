#include "plugin_config.h"

#include <gtest/gtest.h>

#include "decision_log.h"

namespace launchguard::slurm {
namespace {

TEST(SlurmPluginConfig, DefaultsWithNoArguments) {
    auto config = parse_plugin_args({});
    ASSERT_TRUE(config.ok());
    EXPECT_EQ(config->profile, "default");
    EXPECT_EQ(config->mode, Mode::enforce);
    EXPECT_EQ(config->on_error, OnError::allow);
    EXPECT_EQ(config->topology_cache, "/run/launchguard/topology.json");
}

TEST(SlurmPluginConfig, ReadsEveryKey) {
    auto config = parse_plugin_args({"profile=/etc/launchguard/site.yaml", "mode=patch", "user-modes=warn,enforce",
                                     "topology-cache=/var/cache/lg/topo.xml", "on-error=block"});
    ASSERT_TRUE(config.ok()) << config.error().to_string();
    EXPECT_EQ(config->profile, "/etc/launchguard/site.yaml");
    EXPECT_EQ(config->mode, Mode::patch);
    ASSERT_EQ(config->user_modes.size(), 2U);
    EXPECT_EQ(config->user_modes[1], Mode::enforce);
    EXPECT_EQ(config->topology_cache, "/var/cache/lg/topo.xml");
    EXPECT_EQ(config->on_error, OnError::block);
    EXPECT_FALSE(config->timing);
}

TEST(SlurmPluginConfig, TimingIsZeroOrOne) {
    auto on = parse_plugin_args({"timing=1"});
    ASSERT_TRUE(on.ok()) << on.error().to_string();
    EXPECT_TRUE(on->timing);
    auto off = parse_plugin_args({"timing=0"});
    ASSERT_TRUE(off.ok());
    EXPECT_FALSE(off->timing);
    auto bad = parse_plugin_args({"timing=yes"});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().to_string().find("timing must be 0 or 1"), std::string::npos);
}

TEST(SlurmPluginConfig, TheNodeFactsCacheLivesBesideTheTopologyCacheForAMinute) {
    auto defaults = parse_plugin_args({});
    ASSERT_TRUE(defaults.ok());
    EXPECT_EQ(defaults->node_facts_max_age, 60);
    EXPECT_EQ(node_facts_cache_path(*defaults), "/run/launchguard/node-facts.json");

    auto set = parse_plugin_args({"topology-cache=/var/cache/lg/topo.json", "node-facts-max-age=0"});
    ASSERT_TRUE(set.ok()) << set.error().to_string();
    EXPECT_EQ(set->node_facts_max_age, 0);
    EXPECT_EQ(node_facts_cache_path(*set), "/var/cache/lg/node-facts.json");
    auto top = parse_plugin_args({"topology-cache=/topo.json"});
    ASSERT_TRUE(top.ok());
    EXPECT_EQ(node_facts_cache_path(*top), "/node-facts.json");

    for (const char* bad : {"node-facts-max-age=-1", "node-facts-max-age=", "node-facts-max-age=1m",
                            "node-facts-max-age=99999999999999999999999", "topology-cache-max-age=+5"}) {
        auto parsed = parse_plugin_args({bad});
        ASSERT_FALSE(parsed.ok()) << bad;
        EXPECT_EQ(parsed.error().field, bad);
        EXPECT_NE(parsed.error().message.find("must be a number of seconds"), std::string::npos) << bad;
    }
}

TEST(SlurmPluginConfig, TheStepWaitsTenSecondsForItsReadOfTheNodeUnlessTold) {
    auto defaults = parse_plugin_args({});
    ASSERT_TRUE(defaults.ok());
    EXPECT_EQ(defaults->node_read_timeout, 10);
    for (const auto& [arg, seconds] :
         {std::pair{"node-read-timeout=0", 0L}, std::pair{"node-read-timeout=120", 120L}}) {
        auto set = parse_plugin_args({arg});
        ASSERT_TRUE(set.ok()) << set.error().to_string();
        EXPECT_EQ(set->node_read_timeout, seconds) << arg;
    }
    for (const char* bad : {"node-read-timeout=-1", "node-read-timeout=", "node-read-timeout=2s"}) {
        auto parsed = parse_plugin_args({bad});
        ASSERT_FALSE(parsed.ok()) << bad;
        EXPECT_EQ(parsed.error().field, bad);
        EXPECT_NE(parsed.error().message.find("node-read-timeout must be a number of seconds"), std::string::npos)
            << parsed.error().message;
    }
    auto day = parse_plugin_args({"node-read-timeout=86400"});
    ASSERT_TRUE(day.ok());
    auto longer = parse_plugin_args({"node-read-timeout=86401"});
    ASSERT_FALSE(longer.ok());
    EXPECT_NE(longer.error().message.find("at most 86400 seconds"), std::string::npos) << longer.error().message;
}

TEST(SlurmPluginConfig, StrictErrorsNameTheArgument) {
    auto unknown = parse_plugin_args({"mode=warn", "profiel=x"});
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().field, "profiel=x");
    EXPECT_NE(unknown.error().message.find("unknown key 'profiel'"), std::string::npos);

    // The task service's argument is gone: an old plugstack line gets the same error.
    auto service = parse_plugin_args({"mode=warn", "service=/run/launchguard/task.sock"});
    ASSERT_FALSE(service.ok());
    EXPECT_EQ(service.error().field, "service=/run/launchguard/task.sock");
    EXPECT_NE(service.error().message.find("unknown key 'service'"), std::string::npos) << service.error().message;

    auto no_equals = parse_plugin_args({"enforce"});
    ASSERT_FALSE(no_equals.ok());
    EXPECT_EQ(no_equals.error().field, "enforce");

    EXPECT_FALSE(parse_plugin_args({"mode=strict"}).ok());
    EXPECT_FALSE(parse_plugin_args({"on-error=maybe"}).ok());
    EXPECT_FALSE(parse_plugin_args({"topology-cache=relative/path.xml"}).ok());
    EXPECT_FALSE(parse_plugin_args({"user-modes=warn,loud"}).ok());
    EXPECT_FALSE(parse_plugin_args({"profile="}).ok());
}

TEST(SlurmPluginConfig, DefaultUserPolicyAllowsStricterModesAndWarn) {
    PluginConfig config;
    config.mode = Mode::patch;
    EXPECT_TRUE(user_may_choose(config, Mode::enforce));
    EXPECT_TRUE(user_may_choose(config, Mode::patch));
    EXPECT_TRUE(user_may_choose(config, Mode::warn));
    EXPECT_FALSE(user_may_choose(config, Mode::off));
    EXPECT_EQ(allowed_user_modes(config), "enforce, patch, warn");
}

TEST(SlurmPluginConfig, ExplicitUserModesReplaceThePolicy) {
    auto config = parse_plugin_args({"mode=enforce", "user-modes=enforce"});
    ASSERT_TRUE(config.ok());
    EXPECT_FALSE(user_may_choose(*config, Mode::warn));
    EXPECT_TRUE(user_may_choose(*config, Mode::enforce));
    EXPECT_EQ(allowed_user_modes(*config), "enforce");
}

TEST(SlurmDecisionLog, OneKeyValueLinePerDecision) {
    Report report;
    report.profile = "gb300-cx8";
    report.mode = Mode::patch;
    report.decision = Decision::patch;
    Finding qps;
    qps.rule = "net.qps-low";
    qps.action = Action::patch;
    qps.message = "one QP per connection";
    report.findings.push_back(qps);
    report.patch.push_back(RemediationOp::set_env("NCCL_IB_QPS_PER_CONNECTION", "4"));
    std::string line = decision_line({"task_init", "42", "0", "node7"}, report);
    EXPECT_EQ(line,
              "decision hook=task_init job=42 step=0 node=node7 profile=gb300-cx8 mode=patch decision=patch "
              "blocked=- patched=net.qps-low warned=- env=NCCL_IB_QPS_PER_CONNECTION unknown=0");
    EXPECT_EQ(line.find('\n'), std::string::npos);

    std::string message = user_message(report);
    EXPECT_NE(message.find("PATCH net.qps-low: one QP per connection"), std::string::npos);
    EXPECT_NE(message.find("environment patched"), std::string::npos);
}

}  // namespace
}  // namespace launchguard::slurm
