#include "webhook_config.h"

#include <gtest/gtest.h>

#include "unit/probe/temp_tree.h"
#include "util/child_process.h"

namespace launchguard::webhook {
namespace {

using test::TempTree;

TEST(WebhookConfig, WithoutAFileServesTheEmbeddedDefaultInEnforce) {
    auto config = default_webhook_config("default", Mode::enforce);
    ASSERT_TRUE(config.ok()) << config.error().to_string();
    EXPECT_EQ(config->default_profile, "default");
    EXPECT_EQ(config->modes.site_mode, Mode::enforce);
    EXPECT_FALSE(config->user_profiles);
    EXPECT_FALSE(default_webhook_config("no-such-profile", Mode::warn).ok());
}

TEST(WebhookConfig, LoadsProfilesSelectionAndUserPolicy) {
    TempTree tree;
    tree.write("webhook.yaml",
               "mode: patch\n"
               "defaultProfile: default\n"
               "profiles: [azure-ndv5, h100-cx7-ib]\n"
               "selection:\n"
               "  - match: {node.kubernetes.io/instance-type: Standard_ND96isr_H100_v5}\n"
               "    profile: azure-ndv5\n"
               "  - match: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, kubernetes.io/arch: amd64}\n"
               "    profile: h100-cx7-ib\n"
               "userModes: [enforce, warn]\n"
               "userProfiles: true\n");
    auto config = load_webhook_config(tree.path("webhook.yaml"));
    ASSERT_TRUE(config.ok()) << config.error().to_string();
    EXPECT_EQ(config->modes.site_mode, Mode::patch);
    EXPECT_EQ(config->profiles.size(), 3U);
    ASSERT_EQ(config->selection.size(), 2U);
    EXPECT_EQ(config->selection[1].match.size(), 2U);
    EXPECT_TRUE(config->user_profiles);

    Choice azure = choose(*config, {{"node.kubernetes.io/instance-type", "Standard_ND96isr_H100_v5"}}, {});
    EXPECT_EQ(azure.profile->name, "azure-ndv5");
    EXPECT_EQ(azure.reason, "selection node.kubernetes.io/instance-type=Standard_ND96isr_H100_v5");
    // Every label of a rule must match.
    Choice partial = choose(*config, {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}, {});
    EXPECT_EQ(partial.profile->name, "default");
    Choice annotated =
        choose(*config, {}, {{"launchguard.dev/profile", "h100-cx7-ib"}, {"launchguard.dev/mode", "warn"}});
    EXPECT_EQ(annotated.profile->name, "h100-cx7-ib");
    EXPECT_EQ(annotated.mode, Mode::warn);
    EXPECT_TRUE(annotated.refusal.empty());
}

TEST(WebhookConfig, APodCannotChooseALaxerCheckThanTheSitePermits) {
    auto config = default_webhook_config("default", Mode::enforce);
    ASSERT_TRUE(config.ok());
    Choice off = choose(*config, {}, {{"launchguard.dev/mode", "off"}});
    EXPECT_EQ(off.mode, Mode::enforce);
    EXPECT_EQ(off.refusal, "launchguard.dev/mode=off is not allowed on this cluster (allowed: enforce, warn)");
    Choice bogus = choose(*config, {}, {{"launchguard.dev/mode", "sometimes"}});
    EXPECT_EQ(bogus.refusal, "launchguard.dev/mode=sometimes: expected enforce, patch, warn or off");
    Choice profile = choose(*config, {}, {{"launchguard.dev/profile", "default"}});
    EXPECT_EQ(profile.refusal, "launchguard.dev/profile is not honoured on this cluster");
    EXPECT_TRUE(choose(*config, {}, {{"launchguard.dev/mode", "warn"}}).refusal.empty());
}

TEST(WebhookConfig, BadFilesNameTheFieldAndLine) {
    TempTree tree;
    auto error_of = [&](const std::string& yaml) {
        tree.write("bad.yaml", yaml);
        auto config = load_webhook_config(tree.path("bad.yaml"));
        return config.ok() ? std::string("accepted") : config.error().to_string();
    };
    const std::string file = tree.path("bad.yaml");
    EXPECT_EQ(error_of("mode: strict\n"), file + ":1: mode: expected enforce, patch or warn");
    EXPECT_EQ(error_of("mode: off\n"), file + ":1: mode: expected enforce, patch or warn");
    EXPECT_EQ(
        error_of("modes: warn\n"),
        file +
            ":1: modes: unknown key (keys: mode, defaultProfile, profiles, selection, userModes, userProfiles, gate)");
    EXPECT_EQ(error_of("selection:\n  - match: {a: b}\n    profile: azure-ndv5\n"),
              file + ":3: selection[0].profile: profile 'azure-ndv5' is not loaded (add it to profiles)");
    EXPECT_EQ(error_of("selection:\n  - profile: default\n"),
              file + ":2: selection[0]: expected {match: {LABEL: VALUE, ...}, profile: NAME}");
    EXPECT_EQ(error_of("userModes: [enforce, lax]\n"), file + ":1: userModes[1]: expected enforce, patch, warn or off");
    EXPECT_EQ(error_of("userProfiles: yes please\n"), file + ":1: userProfiles: expected true or false");
    EXPECT_NE(error_of("profiles: [no-such-profile]\n").find("profiles[0]"), std::string::npos);
    EXPECT_NE(error_of("mode: [\n").find("not valid YAML"), std::string::npos);
    EXPECT_NE(load_webhook_config(tree.path("missing.yaml")).error().to_string().find(tree.path("missing.yaml")),
              std::string::npos);
    // A repeated key is refused, not read as its first value.
    EXPECT_EQ(error_of("mode: warn\nmode: enforce\n"), file + ":2: mode: duplicate key (first at line 1)");
    EXPECT_EQ(error_of("selection:\n  - match: {a: b, a: c}\n    profile: default\n"),
              file + ":2: selection[0].match.a: duplicate key (first at line 2)");
    EXPECT_EQ(error_of("selection:\n  - match: {a: b}\n    profile: default\n    profile: default\n"),
              file + ":4: selection[0].profile: duplicate key (first at line 3)");
}

// yaml-cpp would loop, allocating, on this: refused before it gets there. The
// guard parses in a forked child, which only a process that has not started a
// thread may do; ctest runs each test in a process of its own.
TEST(WebhookConfig, AYamlTheParserWouldLoopOnIsRefused) {
    if (!forked_child_may_run_library_code())
        GTEST_SKIP() << "this process has started threads (all tests in one process): the YAML guard forks nothing";
    TempTree tree;
    tree.write("looping.yaml", "{mode: warn},\n");
    auto config = load_webhook_config(tree.path("looping.yaml"));
    ASSERT_FALSE(config.ok());
    const std::string looping = config.error().to_string();
    EXPECT_EQ(looping.rfind(tree.path("looping.yaml") + ": the YAML parser", 0), 0U) << looping;
    EXPECT_NE(looping.find("yaml-cpp 0.7 loops on some invalid YAML"), std::string::npos) << looping;
}

TEST(WebhookConfig, TheGateBlockEnablesItWithAnImageAndNamesBadFields) {
    TempTree tree;
    auto load = [&](const std::string& yaml) {
        tree.write("gate.yaml", yaml);
        return load_webhook_config(tree.path("gate.yaml"));
    };
    auto without = load("mode: enforce\n");
    ASSERT_TRUE(without.ok()) << without.error().to_string();
    EXPECT_FALSE(without->gate.enabled);  // no block: no image known, no gate
    EXPECT_FALSE(default_webhook_config("default", Mode::enforce)->gate.enabled);

    auto minimal = load("gate:\n  image: registry.example/launchguard:1.2\n");
    ASSERT_TRUE(minimal.ok()) << minimal.error().to_string();
    EXPECT_TRUE(minimal->gate.enabled);
    EXPECT_EQ(minimal->gate.image, "registry.example/launchguard:1.2");
    EXPECT_EQ(minimal->gate.on_error, kubernetes::GateOnError::allow);
    EXPECT_FALSE(minimal->gate.allow_opt_out);

    auto full = load("gate:\n  enabled: true\n  image: r/lg:1\n  onError: block\n  allowOptOut: true\n");
    ASSERT_TRUE(full.ok()) << full.error().to_string();
    EXPECT_EQ(full->gate.on_error, kubernetes::GateOnError::block);
    EXPECT_TRUE(full->gate.allow_opt_out);
    auto disabled = load("gate:\n  enabled: false\n");
    ASSERT_TRUE(disabled.ok()) << disabled.error().to_string();
    EXPECT_FALSE(disabled->gate.enabled);

    const std::string file = tree.path("gate.yaml");
    auto error_of = [&](const std::string& yaml) {
        auto config = load(yaml);
        return config.ok() ? std::string("accepted") : config.error().to_string();
    };
    EXPECT_EQ(error_of("gate: true\n"), file + ":1: gate: expected a mapping {enabled, image, onError, allowOptOut}");
    EXPECT_EQ(error_of("gate:\n  enabled: true\n"),
              file +
                  ":2: gate.image: required while gate.enabled is true: the image that holds "
                  "/usr/bin/launchguard-gate (the chart's own image)");
    EXPECT_EQ(error_of("gate:\n  image: r/lg:1\n  onError: retry\n"),
              file + ":3: gate.onError: expected allow or block");
    EXPECT_EQ(error_of("gate:\n  image: r/lg:1\n  allowOptOut: maybe\n"),
              file + ":3: gate.allowOptOut: expected true or false");
    EXPECT_EQ(error_of("gate:\n  enabled: yes\n  image: r/lg:1\n"), file + ":2: gate.enabled: expected true or false");
    EXPECT_EQ(error_of("gate:\n  image: [a]\n"), file + ":2: gate.image: expected an image reference");
    EXPECT_EQ(error_of("gate:\n  image: \"r/lg :1\"\n"),
              file + ":2: gate.image: an image reference has no white space");
    EXPECT_EQ(error_of("gate:\n  image: r/lg:1\n  imagePullPolicy: Always\n"),
              file + ":3: gate.imagePullPolicy: unknown key (keys: enabled, image, onError, allowOptOut)");
    EXPECT_EQ(error_of("gate:\n  image: r/lg:1\n  image: r/lg:2\n"),
              file + ":3: gate.image: duplicate key (first at line 2)");
}

TEST(WebhookConfig, TheGateOptOutIsHonouredOnlyWhereTheSiteAllowsIt) {
    TempTree tree;
    tree.write("strict.yaml", "userModes: [enforce, off]\ngate:\n  image: r/lg:1\n");
    tree.write("lenient.yaml", "gate:\n  image: r/lg:1\n  allowOptOut: true\n");
    auto strict = load_webhook_config(tree.path("strict.yaml"));
    auto lenient = load_webhook_config(tree.path("lenient.yaml"));
    ASSERT_TRUE(strict.ok() && lenient.ok());

    Choice plain = choose(*strict, {}, {});
    EXPECT_TRUE(plain.gate);
    EXPECT_TRUE(plain.gate_warning.empty());
    Choice refused = choose(*strict, {}, {{"launchguard.dev/gate", "off"}});
    EXPECT_TRUE(refused.gate);
    EXPECT_FALSE(refused.gate_opted_out);
    EXPECT_TRUE(refused.refusal.empty());  // warned about, never denied
    EXPECT_EQ(refused.gate_warning,
              "launchguard.dev/gate=off is not allowed on this cluster (gate.allowOptOut is false): the gate is added");
    Choice bogus = choose(*strict, {}, {{"launchguard.dev/gate", "disabled"}});
    EXPECT_TRUE(bogus.gate);
    EXPECT_EQ(bogus.gate_warning, "launchguard.dev/gate=disabled: expected off (or on); the launch gate is added");
    EXPECT_TRUE(choose(*strict, {}, {{"launchguard.dev/gate", "on"}}).gate_warning.empty());
    // Mode off (a pod may choose it here): launchguard stays out, gate included.
    Choice off = choose(*strict, {}, {{"launchguard.dev/mode", "off"}});
    EXPECT_FALSE(off.gate);

    Choice opted_out = choose(*lenient, {}, {{"launchguard.dev/gate", "off"}});
    EXPECT_FALSE(opted_out.gate);
    EXPECT_TRUE(opted_out.gate_opted_out);
    EXPECT_TRUE(opted_out.gate_warning.empty());
    EXPECT_TRUE(choose(*lenient, {}, {}).gate);
}

}  // namespace
}  // namespace launchguard::webhook
