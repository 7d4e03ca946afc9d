// Helpers shared by the tests of the rule families that read NCCL's
// environment (network_rules_test.cpp, nccl_tuning_rules_test.cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "context/launch_context.h"
#include "support/launch_fixture.h"
#include "support/rule_harness.h"
#include "support/text.h"

namespace launchguard::testing {

// Every unknown reason of a result, one per line.
inline std::string reasons(const RuleResult& result) {
    std::string all;
    for (const auto& unknown : result.unknowns) all += unknown.reason + "\n";
    return all;
}

// The webhook's view before it has the container env: the task environment is unknown.
inline LaunchContext without_env(LaunchContext ctx) {
    ctx.env = Fact<Environment>::unknown("the manifest's env comes from a ConfigMap launchguard cannot read");
    return ctx;
}

// The env entries and `-x NAME=VALUE` arguments of the AWS EFA nccl-tests
// launcher (k8s/awsome-nccl-tests.yaml), as the job's ranks see them.
inline Environment awsome_efa_env() {
    YAML::Node doc = YAML::LoadFile(fixture_path("k8s/awsome-nccl-tests.yaml"));
    YAML::Node container = doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0];
    Environment env;
    for (const auto& var : container["env"]) env[var["name"].as<std::string>()] = var["value"].as<std::string>();
    for (const auto& arg : container["command"]) {
        std::string text = arg.as<std::string>();
        auto equals = text.find('=');
        if (text.starts_with("NCCL_") && equals != std::string::npos)
            env[text.substr(0, equals)] = text.substr(equals + 1);
    }
    return env;
}

}  // namespace launchguard::testing
