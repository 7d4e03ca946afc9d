// The compiled (JSON) form of profiles: the same schema as the YAML, read
// without a YAML library by the Slurm task checks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/profile_loader.h"
#include "profile/compiled_profiles.h"
#include "profile/profile.h"
#include "rules/rule.h"
#include "support/profile_rules.h"

namespace launchguard {
namespace {

using testing::any_rule;

// Any well-formed rule id; the real rules' parameters (read when first
// used: the rules are not all constructed before main).

std::string temp_file(const std::string& name, const std::string& text) {
    auto path = std::filesystem::temp_directory_path() / ("lg_profile_json_" + std::to_string(::getpid()) + "_" + name);
    std::ofstream(path) << text;
    return path.string();
}

TEST(ProfileJson, EveryEmbeddedProfileSurvivesTheRoundTrip) {
    for (const auto& name : embedded_profile_names()) {
        auto yaml = load_profile(name);
        ASSERT_TRUE(yaml.ok()) << name;
        auto json = parse_profile_json(profile_to_json(*yaml), "compiled:" + name);
        ASSERT_TRUE(json.ok()) << name << ": " << json.error().to_string();
        EXPECT_EQ(*json, *yaml) << name << ": " << profile_to_json(*yaml);
        EXPECT_EQ(profile_to_json(*json), profile_to_json(*yaml)) << name;
    }
}

TEST(ProfileJson, TheCompiledEmbeddedProfilesAreTheShippedYaml) {
    // Written at build time by the CLI: a stale or missing one fails here.
    EXPECT_EQ(compiled_profiles().size(), embedded_profile_names().size());
    for (const auto& name : embedded_profile_names()) {
        auto compiled = load_compiled_profile(name);
        ASSERT_TRUE(compiled.ok()) << name << ": " << compiled.error().to_string();
        EXPECT_EQ(*compiled, *load_profile(name)) << name;
        EXPECT_EQ(compiled->origin, "embedded:" + name);
    }
}

TEST(ProfileJson, EverySettingIsWrittenAndReadBack) {
    auto yaml = parse_profile_with(R"(
name: site
description: every key set
node: {arch: aarch64, virtual_machine: true, grace: true, mnnvl: true, nvswitch: true, gpus: 4, rdma_nics: 4,
       active_ib_ports: 4, ib_rate_gbps: 400.5, page_size: 64KiB, hcas: [mlx5_0, mlx5_1], gpudirect_rdma: true}
topology: {required: true, host_path: /opt/topo.xml, container_path: /etc/topo.xml}
nccl: {net: IB, net_plugin: libnccl-net.so, ib_hca: "=mlx5_0:1", qps_per_connection: {min: 2, min_total_gpus: 64, min_link_gbps: 200},
       min_version: "2.27.3"}
cpu: {governor: schedutil, min_idle_states: 2, min_affinity_overlap: 0.25, numa_balancing_allowed: true}
container: {shm_min: 2GiB, memlock_unlimited: false, open_files_min: 1048576, open_files_min_job_gpus: 0}
virtualization: {require_iommu_passthrough: true, require_nic_ats: true}
rules: {topo.file-missing: block, power.cstates: off}
)",
                                   "site.yaml", any_rule());
    ASSERT_TRUE(yaml.ok()) << yaml.error().to_string();
    const std::string json = profile_to_json(*yaml);
    auto back = parse_profile_json_with(json, "site.json", any_rule());
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(*back, *yaml) << json;
    // Whole numbers stay integers, as they were written.
    EXPECT_NE(json.find("\"min_link_gbps\":200"), std::string::npos) << json;
    EXPECT_NE(json.find("\"ib_rate_gbps\":4.005E2"), std::string::npos) << json;
    EXPECT_NE(json.find("\"shm_min\":2147483648"), std::string::npos) << json;
}

TEST(ProfileJson, TheSchemaHoldsAsForYamlAndErrorsNameTheField) {
    auto unknown = parse_profile_json_with(R"({"name":"x","node":{"gpu_count":8}})", "s.json", any_rule());
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().field, "node.gpu_count");
    EXPECT_EQ(unknown.error().file, "s.json");
    EXPECT_NE(unknown.error().message.find("unknown key"), std::string::npos);

    auto range = parse_profile_json_with(R"({"name":"x","node":{"gpus":5000}})", "s.json", any_rule());
    ASSERT_FALSE(range.ok());
    EXPECT_EQ(range.error().field, "node.gpus");
    EXPECT_NE(range.error().message.find("out of range"), std::string::npos);

    auto type = parse_profile_json_with(R"({"name":"x","node":{"gpus":[8]}})", "s.json", any_rule());
    ASSERT_FALSE(type.ok());
    EXPECT_EQ(type.error().message, "expected an integer, got a list");

    auto boolean = parse_profile_json_with(R"({"name":"x","node":{"grace":1}})", "s.json", any_rule());
    ASSERT_FALSE(boolean.ok());
    EXPECT_EQ(boolean.error().field, "node.grace");

    // Boost.JSON keeps the last of a repeated key; `profile validate` (the
    // YAML reader) refuses it, naming both lines.
    const std::string repeated = R"({"name":"x","cpu":{"governor":"powersave"},)"
                                 "\n"
                                 R"("cpu":{}})";
    auto last_wins = parse_profile_json_with(repeated, "s.json", any_rule());
    ASSERT_TRUE(last_wins.ok());
    EXPECT_EQ(std::get<std::string>(*last_wins->parameter("cpu.governor")), "performance");
    const std::string path = temp_file("repeated.json", repeated);
    auto validated = load_profile(path);
    ASSERT_FALSE(validated.ok());
    EXPECT_NE(validated.error().message.find("duplicate key (first at line 1)"), std::string::npos)
        << validated.error().message;
    EXPECT_EQ(validated.error().line, 2);
    std::filesystem::remove(path);

    auto null_value = parse_profile_json_with(R"({"name":"x","nccl":{"net":null}})", "s.json", any_rule());
    ASSERT_FALSE(null_value.ok());
    EXPECT_EQ(null_value.error().message, "has no value");

    auto rule = parse_profile_json(R"({"name":"x","rules":{"topo.nope":"warn"}})", "s.json");
    ASSERT_FALSE(rule.ok());
    EXPECT_EQ(rule.error().field, "rules.topo.nope");

    auto no_name = parse_profile_json_with(R"({"description":"x"})", "s.json", any_rule());
    ASSERT_FALSE(no_name.ok());
    EXPECT_EQ(no_name.error().field, "name");
}

// yaml-cpp passes any bytes through; the compiled form is JSON, which must be
// UTF-8 (a fuzzer found a description with a stray 0xAF byte).
TEST(ProfileJson, TextThatIsNotUtf8IsASchemaErrorSoEveryProfileCompiles) {
    auto yaml = parse_profile_with("name: x\ndescription: An\xaf GPU node\n", "f.yaml", any_rule());
    ASSERT_FALSE(yaml.ok());
    EXPECT_EQ(yaml.error().field, "description");
    EXPECT_EQ(yaml.error().line, 2);
    EXPECT_EQ(yaml.error().message, "is not valid UTF-8 text");
    auto fine = parse_profile_with("name: x\ndescription: Grace \xe2\x80\x94 Hopper\n", "f.yaml", any_rule());
    ASSERT_TRUE(fine.ok()) << fine.error().to_string();
    auto back = parse_profile_json_with(profile_to_json(*fine), "f.json", any_rule());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->description, "Grace \xe2\x80\x94 Hopper");
}

TEST(ProfileJson, NotJsonOrNotAnObjectIsAnErrorNamingTheFile) {
    for (const char* text : {"", "{", "name: x", "[1,2]", "null", "\"x\"", "{\"name\":\"x\"} trailing"}) {
        auto p = parse_profile_json_with(text, "bad.json", any_rule());
        ASSERT_FALSE(p.ok()) << text;
        EXPECT_EQ(p.error().file, "bad.json") << text;
    }
    // Deep nesting is refused by the parser's depth limit, never a crash.
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    EXPECT_FALSE(parse_profile_json_with(deep, "deep.json", any_rule()).ok());
}

TEST(ProfileJson, LoadersReadCompiledFilesAndTheCompiledLoaderRefusesYaml) {
    auto yaml = load_profile("gb300-cx8");
    ASSERT_TRUE(yaml.ok());
    const std::string json_path = temp_file("site.json", profile_to_json(*yaml));
    auto by_cli_loader = load_profile(json_path);
    ASSERT_TRUE(by_cli_loader.ok()) << by_cli_loader.error().to_string();
    EXPECT_EQ(*by_cli_loader, *yaml);
    EXPECT_EQ(by_cli_loader->origin, json_path);
    auto by_compiled_loader = load_compiled_profile(json_path);
    ASSERT_TRUE(by_compiled_loader.ok());
    EXPECT_EQ(*by_compiled_loader, *yaml);

    auto yaml_file = load_compiled_profile("/etc/launchguard/site.yaml");
    ASSERT_FALSE(yaml_file.ok());
    EXPECT_NE(yaml_file.error().message.find("launchguard profile compile"), std::string::npos);
    auto unknown = load_compiled_profile("no-such-profile");
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message.find("azure-ndv5"), std::string::npos);
    std::filesystem::remove(json_path);
}

TEST(ProfileJson, WhichReferencesNeedNoYaml) {
    EXPECT_TRUE(is_compiled_profile_reference("default"));
    EXPECT_TRUE(is_compiled_profile_reference("h100-cx7-ib"));
    EXPECT_TRUE(is_compiled_profile_reference("/etc/launchguard/site.json"));
    EXPECT_FALSE(is_compiled_profile_reference("/etc/launchguard/site.yaml"));
    EXPECT_FALSE(is_compiled_profile_reference("site.yml"));
    EXPECT_FALSE(is_compiled_profile_reference("./profiles/site"));
}

}  // namespace
}  // namespace launchguard
