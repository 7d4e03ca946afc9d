// Rule parameters: a rule declares its thresholds beside its RuleInfo and the
// profile readers validate them through those descriptors. The rule below is
// declared here, in a test file, with parameters of its own (one in a section
// of its own, one joining `cpu:`): the real readers take them and the rule
// reads them back, with nothing in src/profile/ knowing them.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>

#include "engine/profile_loader.h"
#include "report/rule_catalog.h"
#include "rules/table_rule.h"
#include "support/launch_fixture.h"
#include "support/rule_harness.h"

namespace launchguard {
namespace {

using testing::launch_from_yaml;
using testing::run_rule;

constexpr IntegerParameter<int> kMaxGpus{"widgets.max_gpus", 8, 1, 64, "fire for jobs of more GPUs"};
constexpr std::array<std::string_view, 2> kModes{"strict", "lenient"};
constexpr ChoiceParameter kMode{"widgets.mode", "strict", kModes, "widget mode", "how the widgets are counted"};
constexpr ByteSizeParameter kWidgetBuffer{"cpu.widget_buffer", 64ULL << 20, "the buffer each widget needs"};
constexpr auto kWidgetParameters = parameter_list(kMaxGpus, kMode, kWidgetBuffer);

void check_widgets(const RuleInput& in, RuleOutput& out) {
    const Fact<int>& gpus = in.ctx.job.total_gpus;
    if (!gpus) {
        out.unknown("cannot tell the job's GPUs because " + gpus.reason());
        return;
    }
    if (*gpus <= kMaxGpus.in(in.profile)) return;
    Finding& finding = out.fire(std::to_string(*gpus) + " GPUs is more than the profile's widgets.max_gpus");
    finding.evidence.emplace_back("max_gpus", std::to_string(kMaxGpus.in(in.profile)));
    finding.evidence.emplace_back("mode", std::string(kMode.in(in.profile)));
}

const TableRule kWidgets{RuleInfo{
                             .id = "test.widgets",
                             .title = "Too many GPUs for the widgets",
                             .default_action = Action::warn,
                             .severity = Severity::warning,
                             .scopes = kScopeCli,
                             .checks = "The job's GPUs against widgets.max_gpus.",
                             .why = "A test rule.",
                             .evidence = "The profile's maximum.",
                             .fix = "Fewer GPUs.",
                             .parameters = kWidgetParameters,
                         },
                         check_widgets};

// The registry's rules and the test rule, as the profile readers see them.
const ProfileRules& rules_with_widgets() {
    static const std::vector<const Rule*> rules = [] {
        std::vector<const Rule*> list = all_rules();
        list.push_back(&kWidgets);
        return list;
    }();
    static const std::vector<const ProfileParameter*> parameters = parameters_of(rules);
    static const ProfileRules profile_rules{
        .known_rule = [](const std::string& id) { return id == "test.widgets" || is_known_rule_id(id); },
        .parameters = parameters};
    return profile_rules;
}

Profile widgets_profile(const std::string& yaml) {
    auto profile = parse_profile_with(yaml, "widgets.yaml", rules_with_widgets());
    if (!profile) throw std::runtime_error(profile.error().to_string());
    return *profile;
}

TEST(RuleParameter, ATestRulesOwnParametersAreReadFromAProfile) {
    const Profile site = widgets_profile(
        "name: site\nwidgets:\n  max_gpus: 16\n  mode: lenient\ncpu:\n  widget_buffer: 1GiB\n  min_idle_states: 2\n"
        "rules:\n  test.widgets: block\n");
    EXPECT_EQ(kMaxGpus.in(site), 16);
    EXPECT_EQ(kMode.in(site), "lenient");
    EXPECT_EQ(kWidgetBuffer.in(site), 1ULL << 30);
    ASSERT_NE(site.parameter("cpu.min_idle_states"), nullptr);  // the section's real parameters still read
    EXPECT_EQ(parameter_value_text(*site.parameter("cpu.min_idle_states")), "2");
    EXPECT_EQ(site.action_for("test.widgets", Action::warn), Action::block);

    // The rule reads them: quiet at its threshold, fires above it.
    EXPECT_TRUE(run_rule(kWidgets, launch_from_yaml("job: {gpus: 16}"), site).quiet());
    auto above = run_rule(kWidgets, launch_from_yaml("job: {gpus: 17}"), site);
    ASSERT_TRUE(above.fired());
    EXPECT_EQ(above.evidence("max_gpus"), "16");
    EXPECT_EQ(above.evidence("mode"), "lenient");

    // Without the test rule the readers know no `widgets:`.
    auto real = parse_profile("name: site\nwidgets:\n  max_gpus: 16\n", "site.yaml");
    ASSERT_FALSE(real.ok());
    EXPECT_EQ(real.error().field, "widgets");
    EXPECT_NE(real.error().message.find("unknown key"), std::string::npos) << real.error().message;
}

TEST(RuleParameter, DefaultsApplyWhenTheProfileIsSilent) {
    const Profile silent = widgets_profile("name: silent\n");
    // The readers write every default into the profile...
    ASSERT_NE(silent.parameter("widgets.max_gpus"), nullptr);
    EXPECT_EQ(parameter_value_text(*silent.parameter("widgets.max_gpus")), "8");
    EXPECT_EQ(kMaxGpus.in(silent), 8);
    EXPECT_EQ(kMode.in(silent), "strict");
    EXPECT_EQ(kWidgetBuffer.in(silent), 64ULL << 20);
    // ...and a profile built in code answers them too.
    EXPECT_EQ(kMaxGpus.in(Profile{}), 8);
    EXPECT_EQ(kMode.in(Profile{}), "strict");

    EXPECT_TRUE(run_rule(kWidgets, launch_from_yaml("job: {gpus: 8}"), silent).quiet());
    EXPECT_TRUE(run_rule(kWidgets, launch_from_yaml("job: {gpus: 9}"), silent).fired());
    EXPECT_TRUE(run_rule(kWidgets, launch_from_yaml(""), silent).undecided());
}

TEST(RuleParameter, BoundsAndTypeErrorsNameTheLineAndTheFieldInYamlAndTheFieldInJson) {
    auto yaml = parse_profile_with("name: x\nwidgets:\n  max_gpus: 65\n", "site.yaml", rules_with_widgets());
    ASSERT_FALSE(yaml.ok());
    EXPECT_EQ(yaml.error().file, "site.yaml");
    EXPECT_EQ(yaml.error().line, 3);
    EXPECT_EQ(yaml.error().field, "widgets.max_gpus");
    EXPECT_EQ(yaml.error().message, "value 65 out of range [1, 64]");

    auto json = parse_profile_json_with(R"({"name":"x","widgets":{"max_gpus":0}})", "site.json", rules_with_widgets());
    ASSERT_FALSE(json.ok());
    EXPECT_EQ(json.error().file, "site.json");
    EXPECT_EQ(json.error().field, "widgets.max_gpus");
    EXPECT_EQ(json.error().message, "value 0 out of range [1, 64]");

    auto word = parse_profile_with("name: x\nwidgets:\n  mode: medium\n", "site.yaml", rules_with_widgets());
    ASSERT_FALSE(word.ok());
    EXPECT_EQ(word.error().line, 3);
    EXPECT_EQ(word.error().message, "unknown widget mode 'medium' (known: strict, lenient)");

    auto size = parse_profile_with("name: x\ncpu:\n  widget_buffer: lots\n", "site.yaml", rules_with_widgets());
    ASSERT_FALSE(size.ok());
    EXPECT_EQ(size.error().field, "cpu.widget_buffer");
    EXPECT_EQ(size.error().line, 3);

    // A misspelt key lists the keys the section has, the real ones included.
    auto misspelt = parse_profile_with("name: x\ncpu:\n  widget_bufer: 1GiB\n", "site.yaml", rules_with_widgets());
    ASSERT_FALSE(misspelt.ok());
    EXPECT_EQ(misspelt.error().line, 3);
    EXPECT_EQ(misspelt.error().field, "cpu.widget_bufer");
    EXPECT_EQ(misspelt.error().message,
              "unknown key (known keys: governor, min_affinity_overlap, min_idle_states, numa_balancing_allowed, "
              "widget_buffer)");
}

TEST(RuleParameter, TheCompiledFormCarriesThemBack) {
    const Profile site = widgets_profile("name: site\nwidgets: {max_gpus: 32}\n");
    const std::string json = profile_to_json(site);
    EXPECT_NE(json.find(R"("widgets":{"max_gpus":32,"mode":"strict"})"), std::string::npos) << json;
    EXPECT_NE(json.find(R"("widget_buffer":67108864)"), std::string::npos) << json;
    auto back = parse_profile_json_with(json, "site.json", rules_with_widgets());
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(*back, site);
    EXPECT_EQ(kMaxGpus.in(*back), 32);
}

TEST(RuleParameter, ExplainShowsEachParameterWithItsDefaultAndDoc) {
    const std::string text = render_rule_explanation(kWidgets.info());
    EXPECT_NE(text.find("Profile parameters\n"
                        "  widgets.max_gpus: fire for jobs of more GPUs; an integer from 1 to 64; default 8\n"
                        "  widgets.mode: how the widgets are counted; one of strict, lenient; default strict\n"
                        "  cpu.widget_buffer: the buffer each widget needs; a size such as 1GiB; default 64MiB\n"),
              std::string::npos)
        << text;
}

// --- the registry's own parameters ------------------------------------------

std::string value_of(const Profile& profile, std::string_view key) {
    const ParameterValue* value = profile.parameter(key);
    return value == nullptr ? "absent" : parameter_value_text(*value);
}

TEST(RuleParameter, EveryRegisteredKeyIsUniqueAndEveryGroupFieldHasADefault) {
    std::set<std::string_view> keys;
    for (const ProfileParameter* parameter : all_profile_parameters()) {
        EXPECT_TRUE(keys.insert(parameter->key).second) << parameter->key << " declared twice";
        EXPECT_NE(parameter->key.find('.'), std::string_view::npos) << parameter->key << ": section.name";
        EXPECT_FALSE(parameter->doc.empty()) << parameter->key;
        for (const ProfileParameter* field : parameter->fields) {
            EXPECT_TRUE(field->key.starts_with(std::string(parameter->key) + ".")) << field->key;
            ParameterValue value;
            EXPECT_TRUE(parameter_default_value(*field, value)) << field->key << " needs a default";
        }
    }
    // Every threshold that used to be a field of Profile is declared by its rule.
    for (const char* key :
         {"cpu.governor", "cpu.min_idle_states", "cpu.min_affinity_overlap", "cpu.numa_balancing_allowed",
          "container.shm_min", "container.memlock_unlimited", "container.open_files_min",
          "container.open_files_min_job_gpus", "virtualization.require_iommu_passthrough",
          "virtualization.require_nic_ats", "nccl.qps_per_connection", "nccl.min_version"}) {
        EXPECT_EQ(keys.count(key), 1U) << key;
    }
}

TEST(RuleParameter, ARealThresholdOutOfBoundsNamesItsLineAndFieldInYamlAndJson) {
    auto yaml = parse_profile("name: x\ncpu:\n  min_idle_states: 65\n", "site.yaml");
    ASSERT_FALSE(yaml.ok());
    EXPECT_EQ(yaml.error().line, 3);
    EXPECT_EQ(yaml.error().field, "cpu.min_idle_states");
    EXPECT_EQ(yaml.error().message, "value 65 out of range [0, 64]");
    auto json = parse_profile_json(R"({"name":"x","cpu":{"min_affinity_overlap":1.5}})", "site.json");
    ASSERT_FALSE(json.ok());
    EXPECT_EQ(json.error().field, "cpu.min_affinity_overlap");
    EXPECT_NE(json.error().message.find("out of range"), std::string::npos) << json.error().message;
}

TEST(RuleParameter, AGroupGivenEmptyTakesEveryDefaultAndAbsentStaysAbsent) {
    auto absent = parse_profile("name: x\n", "x.yaml");
    ASSERT_TRUE(absent.ok());
    EXPECT_EQ(value_of(*absent, "nccl.qps_per_connection.min"), "absent");
    auto empty = parse_profile("name: x\nnccl:\n  qps_per_connection: {}\n", "x.yaml");
    ASSERT_TRUE(empty.ok()) << empty.error().to_string();
    EXPECT_EQ(value_of(*empty, "nccl.qps_per_connection.min"), "4");
    EXPECT_EQ(value_of(*empty, "nccl.qps_per_connection.min_total_gpus"), "512");
    EXPECT_EQ(value_of(*empty, "nccl.qps_per_connection.min_link_gbps"), "800");
    auto unknown = parse_profile("name: x\nnccl:\n  qps_per_connection:\n    minimum: 4\n", "x.yaml");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().line, 4);
    EXPECT_EQ(unknown.error().field, "nccl.qps_per_connection.minimum");
    EXPECT_EQ(unknown.error().message, "unknown key (known keys: min, min_link_gbps, min_total_gpus)");
}

TEST(RuleParameter, TheDefaultProfileWritesEveryThresholdToItsCompiledForm) {
    const std::string json = profile_to_json(default_profile());
    for (const char* expected :
         {R"("cpu":{"governor":"performance","min_affinity_overlap":5E-1,"min_idle_states":3,)",
          R"("container":{"memlock_unlimited":true,"open_files_min":65536,"open_files_min_job_gpus":64,)",
          R"("shm_min":1073741824})",
          R"("virtualization":{"require_iommu_passthrough":false,"require_nic_ats":false})"}) {
        EXPECT_NE(json.find(expected), std::string::npos) << expected << " in " << json;
    }
}

}  // namespace
}  // namespace launchguard
