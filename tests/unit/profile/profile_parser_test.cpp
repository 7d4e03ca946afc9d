#include <gtest/gtest.h>

#include "engine/profile_loader.h"
#include "profile/profile.h"
#include "rules/rule.h"
#include "support/profile_rules.h"
#include "util/size_parser.h"

namespace launchguard {
namespace {

using testing::any_rule;

// A rule parameter's value as a profile would write it; "absent" where the profile holds none.
std::string parameter(const Profile& profile, std::string_view key) {
    const ParameterValue* value = profile.parameter(key);
    return value == nullptr ? "absent" : parameter_value_text(*value);
}

TEST(ProfileParser, ReadsEverySection) {
    auto p = parse_profile_with(R"(
name: test
description: a profile
node:
  arch: aarch64
  virtual_machine: true
  grace: true
  mnnvl: true
  gpus: 4
  rdma_nics: 4
  active_ib_ports: 4
  ib_rate_gbps: 800
  page_size: 64KiB
  hcas: [mlx5_0, mlx5_1]
topology:
  required: true
  host_path: /opt/topo.xml
nccl:
  net: IB
  ib_hca: "=mlx5_0,mlx5_1"
  qps_per_connection: {min: 4, min_total_gpus: 512, min_link_gbps: 800}
cpu:
  governor: performance
  min_idle_states: 2
container:
  shm_min: 2GiB
rules:
  topo.file-missing: patch
)",
                                "test.yaml", any_rule());
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    EXPECT_EQ(p->name, "test");
    EXPECT_EQ(p->node.arch, "aarch64");
    EXPECT_TRUE(p->node.mnnvl);
    EXPECT_EQ(p->node.gpus, 4);
    EXPECT_EQ(p->node.page_size, 65536);
    EXPECT_EQ(p->node.hcas.size(), 2U);
    EXPECT_EQ(p->topology.container_path, "/opt/topo.xml");  // defaults to host_path
    EXPECT_EQ(parameter(*p, "nccl.qps_per_connection.min"), "4");
    EXPECT_EQ(parameter(*p, "container.shm_min"), std::to_string(2ULL << 30));
    EXPECT_EQ(p->action_for("topo.file-missing", Action::block), Action::patch);
    EXPECT_EQ(p->action_for("net.qps-low", Action::warn), Action::warn);
}

TEST(ProfileParser, UnknownKeyIsAnErrorWithLineAndField) {
    auto p = parse_profile_with("name: x\nnode:\n  gpus: 8\n  gpu_count: 8\n", "site.yaml", any_rule());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().file, "site.yaml");
    EXPECT_EQ(p.error().line, 4);
    EXPECT_EQ(p.error().field, "node.gpu_count");
    EXPECT_NE(p.error().message.find("unknown key"), std::string::npos);
}

TEST(ProfileParser, WrongTypesAreErrors) {
    auto a = parse_profile_with("name: x\nnode:\n  gpus: eight\n", "f.yaml", any_rule());
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.error().field, "node.gpus");
    EXPECT_EQ(a.error().line, 3);

    auto b = parse_profile_with("name: x\ncontainer:\n  shm_min: 1 gigabyte\n", "f.yaml", any_rule());
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().field, "container.shm_min");

    auto c = parse_profile_with("name: x\nnode:\n  mnnvl: yes please\n", "f.yaml", any_rule());
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().field, "node.mnnvl");
}

TEST(ProfileParser, RuleActionsAreValidated) {
    auto bad_action = parse_profile_with("name: x\nrules:\n  topo.file-missing: explode\n", "f.yaml", any_rule());
    ASSERT_FALSE(bad_action.ok());
    EXPECT_EQ(bad_action.error().field, "rules.topo.file-missing");
    EXPECT_EQ(bad_action.error().line, 3);

    auto unknown_rule =
        parse_profile_with("name: x\nrules:\n  topo.nope: warn\n", "f.yaml",
                           {.known_rule = [](const std::string& id) { return id == "topo.file-missing"; }});
    ASSERT_FALSE(unknown_rule.ok());
    EXPECT_NE(unknown_rule.error().message.find("unknown rule id"), std::string::npos);
}

TEST(ProfileParser, MissingNameAndBrokenYaml) {
    auto no_name = parse_profile_with("description: x\n", "f.yaml", any_rule());
    ASSERT_FALSE(no_name.ok());
    EXPECT_EQ(no_name.error().field, "name");

    auto broken = parse_profile_with("name: x\nnode: [unclosed\n", "f.yaml", any_rule());
    ASSERT_FALSE(broken.ok());
    EXPECT_NE(broken.error().message.find("invalid YAML"), std::string::npos);
    EXPECT_GT(broken.error().line, 0);

    auto empty = parse_profile_with("", "f.yaml", any_rule());
    ASSERT_FALSE(empty.ok());

    auto not_a_map = parse_profile_with("- a\n- b\n", "f.yaml", any_rule());
    ASSERT_FALSE(not_a_map.ok());
}

TEST(ProfileParser, DeepNestingSaysItNestsTooDeepWithTheLine) {
    const std::string yaml = "name: x\ndescription: " + std::string(1000, '[') + std::string(1000, ']') + "\n";
    auto deep = parse_profile_with(yaml, "deep.yaml", any_rule());
    ASSERT_FALSE(deep.ok());
    EXPECT_EQ(deep.error().file, "deep.yaml");
    EXPECT_EQ(deep.error().line, 2);
    EXPECT_NE(deep.error().message.find("nests too deep"), std::string::npos) << deep.error().to_string();
    EXPECT_EQ(deep.error().message.find("bad file"), std::string::npos) << deep.error().to_string();
}

TEST(ProfileParser, AnAliasBombIsRefusedBeforeItExpands) {
    std::string yaml = "name: x\nx0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int level = 1; level <= 7; ++level) {
        yaml += "x" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
        for (int i = 0; i < 10; ++i) yaml += (i == 0 ? "*a" : ", *a") + std::to_string(level - 1);
        yaml += "]\n";
    }
    auto bomb = parse_profile_with(yaml, "bomb.yaml", any_rule());
    ASSERT_FALSE(bomb.ok());
    EXPECT_EQ(bomb.error().file, "bomb.yaml");
    EXPECT_NE(bomb.error().message.find("expands to more than"), std::string::npos) << bomb.error().to_string();
}

TEST(ProfileParser, RequiredTopologyNeedsAHostPath) {
    auto p = parse_profile_with("name: x\ntopology:\n  required: true\n", "f.yaml", any_rule());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().field, "topology.host_path");
}

TEST(ProfileParser, DuplicateKeysAreAnErrorNamingBothLines) {
    // yaml-cpp keeps both and answers with the first: the second block was never validated.
    auto p = parse_profile_with("name: x\nnode:\n  gpus: 8\nnode:\n  gpus: nine\n", "f.yaml", any_rule());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().line, 4);
    EXPECT_EQ(p.error().field, "node");
    EXPECT_NE(p.error().message.find("duplicate key (first at line 2)"), std::string::npos) << p.error().message;

    auto nested =
        parse_profile_with("name: x\ncpu:\n  governor: performance\n  governor: powersave\n", "f.yaml", any_rule());
    ASSERT_FALSE(nested.ok());
    EXPECT_EQ(nested.error().field, "cpu.governor");

    auto rules = parse_profile_with("name: x\nrules:\n  topo.file-missing: warn\n  topo.file-missing: off\n", "f.yaml",
                                    any_rule());
    ASSERT_FALSE(rules.ok());
    EXPECT_EQ(rules.error().line, 4);
}

TEST(ProfileParser, EnumsAndRangesAreChecked) {
    auto governor = parse_profile_with("name: x\ncpu:\n  governor: perfromance\n", "f.yaml", any_rule());
    ASSERT_FALSE(governor.ok());
    EXPECT_EQ(governor.error().line, 3);
    EXPECT_NE(governor.error().message.find("unknown cpufreq governor 'perfromance'"), std::string::npos)
        << governor.error().message;
    for (const char* size : {"1B", "8EiB", "2GiB"}) {
        auto page =
            parse_profile_with(std::string("name: x\nnode:\n  page_size: ") + size + "\n", "f.yaml", any_rule());
        EXPECT_FALSE(page.ok()) << size;
    }
    EXPECT_TRUE(parse_profile_with("name: x\nnode:\n  page_size: 16KiB\n", "f.yaml", any_rule()).ok());
    auto huge = parse_profile_with("name: x\nnode:\n  gpus: 99999999999999999999999\n", "f.yaml", any_rule());
    ASSERT_FALSE(huge.ok());
    EXPECT_NE(huge.error().message.find("out of range [0, 1024]"), std::string::npos) << huge.error().message;
}

TEST(ProfileParser, TransportKnobsAndTheirDefaults) {
    auto defaults = parse_profile_with("name: x\n", "f.yaml", any_rule());
    ASSERT_TRUE(defaults.ok());
    EXPECT_FALSE(defaults->node.gpudirect_rdma);
    EXPECT_EQ(parameter(*defaults, "nccl.min_version"), "absent");
    EXPECT_EQ(parameter(*defaults, "container.open_files_min"), "65536");
    EXPECT_EQ(parameter(*defaults, "container.open_files_min_job_gpus"), "64");
    EXPECT_EQ(parameter(*defaults, "virtualization.require_nic_ats"), "false");
    auto set = parse_profile_with(
        "name: x\nnode: {gpudirect_rdma: true}\nnccl: {min_version: '2.27.3'}\n"
        "container: {open_files_min: 1048576, open_files_min_job_gpus: 0}\nvirtualization: {require_nic_ats: true}\n",
        "f.yaml", any_rule());
    ASSERT_TRUE(set.ok()) << set.error().to_string();
    EXPECT_TRUE(set->node.gpudirect_rdma);
    EXPECT_EQ(parameter(*set, "nccl.min_version"), "2.27.3");
    EXPECT_EQ(parameter(*set, "container.open_files_min"), "1048576");
    EXPECT_EQ(parameter(*set, "container.open_files_min_job_gpus"), "0");
    EXPECT_EQ(parameter(*set, "virtualization.require_nic_ats"), "true");
    for (const char* bad : {"2", "2.27.x", "v2.27", "2..3", "2.27.3.1"}) {
        auto version =
            parse_profile_with(std::string("name: x\nnccl:\n  min_version: \"") + bad + "\"\n", "f.yaml", any_rule());
        ASSERT_FALSE(version.ok()) << bad;
        EXPECT_EQ(version.error().line, 3) << bad;
        EXPECT_EQ(version.error().field, "nccl.min_version") << bad;
    }
    auto negative = parse_profile_with("name: x\ncontainer:\n  open_files_min: -1\n", "f.yaml", any_rule());
    ASSERT_FALSE(negative.ok());
    EXPECT_EQ(negative.error().field, "container.open_files_min");
}

TEST(ProfileParser, MessagesSayWhatWasFoundAndWhere) {
    auto list = parse_profile_with("name: x\nnode:\n  gpus: [1, 2]\n", "f.yaml", any_rule());
    ASSERT_FALSE(list.ok());
    EXPECT_EQ(list.error().message, "expected an integer, got a list");

    // An empty value is reported on its key's line, not the next one.
    auto empty = parse_profile_with("name: x\nnode:\n  gpus:\n  rdma_nics: 4\n", "f.yaml", any_rule());
    ASSERT_FALSE(empty.ok());
    EXPECT_EQ(empty.error().line, 3);
    EXPECT_EQ(empty.error().field, "node.gpus");
    EXPECT_EQ(empty.error().message, "has no value");

    // A key that is not a string used to leak yaml-cpp's "bad conversion".
    auto key = parse_profile_with("name: x\nnode:\n  [a, b]: 1\n", "f.yaml", any_rule());
    ASSERT_FALSE(key.ok());
    EXPECT_EQ(key.error().message.find("bad conversion"), std::string::npos) << key.error().message;
    EXPECT_EQ(key.error().line, 3);

    auto topo =
        parse_profile_with("name: x\ntopology:\n  required: true\n  host_path: opt/topo.xml\n", "f.yaml", any_rule());
    ASSERT_FALSE(topo.ok());
    EXPECT_EQ(topo.error().line, 4);
    EXPECT_EQ(topo.error().field, "topology.host_path");
}

TEST(ProfileLoader, ADirectoryIsNamedForWhatItIsAndOpenErrorsSayWhy) {
    auto dir = load_profile("/tmp/");
    ASSERT_FALSE(dir.ok());
    EXPECT_NE(dir.error().message.find("is a directory"), std::string::npos) << dir.error().message;
    auto missing = load_profile("/nonexistent/site.yaml");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("No such file or directory"), std::string::npos) << missing.error().message;
}

TEST(ProfileLoader, EveryEmbeddedProfileParsesAgainstTheRealRuleList) {
    auto names = embedded_profile_names();
    EXPECT_GE(names.size(), 6U);
    for (const auto& name : names) {
        auto p = load_profile(name);
        EXPECT_TRUE(p.ok()) << name << ": " << (p.ok() ? "" : p.error().to_string());
    }
    EXPECT_EQ(default_profile().name, "default");
    EXPECT_EQ(default_profile().origin, "embedded:default");
}

TEST(ProfileLoader, ShippedExamplesCoverTheRequiredNodeClasses) {
    for (const char* name : {"bare-metal", "h100-cx7-ib", "gb200-nvl72", "gb300-cx8", "b300-cx8", "azure-ndv5"}) {
        auto p = load_profile(name);
        ASSERT_TRUE(p.ok()) << name;
    }
    EXPECT_TRUE(load_profile("azure-ndv5")->topology.required);
    EXPECT_TRUE(load_profile("gb200-nvl72")->node.mnnvl);
    EXPECT_EQ(parameter(*load_profile("gb300-cx8"), "nccl.qps_per_connection.min_total_gpus"), "512");
}

TEST(ProfileLoader, UnknownNameAndMissingFile) {
    auto name = load_profile("no-such-profile");
    ASSERT_FALSE(name.ok());
    EXPECT_NE(name.error().message.find("azure-ndv5"), std::string::npos);  // lists what exists
    auto file = load_profile("/nonexistent/site.yaml");
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(file.error().file, "/nonexistent/site.yaml");
}

TEST(SizeParser, BinaryUnits) {
    EXPECT_EQ(*parse_byte_size("1GiB"), 1ULL << 30);
    EXPECT_EQ(*parse_byte_size("512Mi"), 512ULL << 20);
    EXPECT_EQ(*parse_byte_size("64K"), 64ULL << 10);
    EXPECT_EQ(*parse_byte_size("4096"), 4096ULL);
    EXPECT_FALSE(parse_byte_size("1 GiB").ok());
    EXPECT_FALSE(parse_byte_size("GiB").ok());
    EXPECT_FALSE(parse_byte_size("99999999999999TiB").ok());
    EXPECT_EQ(format_byte_size(1ULL << 30), "1 GiB");
    EXPECT_EQ(format_byte_size(65536), "64 KiB");
    EXPECT_EQ(format_byte_size(1000), "1000 bytes");
}

}  // namespace
}  // namespace launchguard
