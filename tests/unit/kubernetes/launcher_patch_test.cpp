// Fixes for the ranks of an MPIJob go on the Launcher's mpirun line, in
// the launcher's own syntax, as an argv word or inside its `sh -c` script;
// what the launcher's options set themselves is left with the instruction
// to remove it. The patched object reviews clean.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <boost/json.hpp>

#include "engine/profile_loader.h"
#include "kubernetes/json_patch.h"
#include "kubernetes/manifest_documents.h"
#include "kubernetes/workload_review.h"
#include "support/azure_fixtures.h"

namespace launchguard::kubernetes {
namespace {

namespace json = boost::json;

// A node class whose topology file must reach every rank: topo.required's
// fix mounts the file into the worker and sets NCCL_TOPO_FILE.
const Profile& ib_profile() {
    static const Profile profile = [] {
        auto parsed =
            parse_profile("name: ndv5-site\ntopology:\n  required: true\n  host_path: /opt/microsoft/ndv5-topo.xml\n",
                          "test profile");
        EXPECT_TRUE(parsed) << parsed.error().to_string();
        return parsed ? *parsed : default_profile();
    }();
    return profile;
}

std::vector<json::value> fixture(const std::string& name) {
    auto documents = read_manifest_documents(testing::fixture_text("k8s/" + name), name);
    EXPECT_TRUE(documents) << documents.error().to_string();
    std::vector<json::value> objects;
    if (documents) {
        for (const auto& document : *documents) objects.push_back(document.object);
    }
    return objects;
}

WorkloadReview review(const json::value& object) {
    ReviewOptions options;
    options.fix_blocking = true;
    auto result = review_workload(object, ib_profile(), options);
    EXPECT_TRUE(result) << result.error().to_string();
    return result ? *result : WorkloadReview{};
}

json::value patched(const json::value& object, const WorkloadReview& reviewed) {
    auto applied = apply_json_patch(object, reviewed.patch);
    EXPECT_TRUE(applied) << applied.error().to_string();
    return applied ? *applied : json::value();
}

const json::object& launcher(const json::value& object) {
    return object.at_pointer("/spec/mpiReplicaSpecs/Launcher/template/spec/containers/0").as_object();
}

std::vector<std::string> strings(const json::value* list) {
    std::vector<std::string> out;
    if (list == nullptr) return out;
    for (const auto& item : list->as_array()) out.emplace_back(item.as_string());
    return out;
}

// The words of command followed by args.
std::vector<std::string> argv(const json::object& container) {
    auto out = strings(container.if_contains("command"));
    for (auto& word : strings(container.if_contains("args"))) out.push_back(word);
    return out;
}

bool patches_worker_env(const WorkloadReview& reviewed) {
    for (const auto& op : reviewed.patch) {
        const std::string path(op.at("path").as_string());
        if (path.find("/Worker/") != std::string::npos && path.find("/env") != std::string::npos) return true;
    }
    return false;
}

std::string manual_text(const WorkloadReview& reviewed, const std::string& rule) {
    for (const auto& finding : reviewed.report.findings) {
        if (finding.rule != rule) continue;
        for (const auto& op : finding.remediation) {
            if (op.kind == RemediationOp::Kind::manual) return op.text;
        }
    }
    return "";
}

bool fired(const WorkloadReview& reviewed, const std::string& rule) {
    for (const auto& finding : reviewed.report.findings) {
        if (finding.rule == rule) return true;
    }
    return false;
}

// The patched object again: nothing left to patch, the fixed rule quiet.
void expect_settled(const json::value& fixed) {
    const WorkloadReview again = review(fixed);
    EXPECT_TRUE(again.patch.empty()) << json::serialize(again.patch);
    EXPECT_FALSE(fired(again, "topo.required"));
    EXPECT_FALSE(fired(again, "topo.not-propagated"));
}

TEST(MpiLauncherPatch, OpenMpiArgvGetsMinusXWordsBeforeTheProgram) {
    const auto objects = fixture("mpijob-openmpi-argv.yaml");
    ASSERT_EQ(objects.size(), 1U);
    const WorkloadReview reviewed = review(objects[0]);
    ASSERT_TRUE(fired(reviewed, "topo.required"));
    EXPECT_FALSE(patches_worker_env(reviewed)) << json::serialize(reviewed.patch);
    const json::value fixed = patched(objects[0], reviewed);
    const auto words = argv(launcher(fixed));
    ASSERT_GE(words.size(), 17U);
    // The options end before `python`: the new -x goes there, as two words.
    EXPECT_EQ(words[14], "-x");
    EXPECT_EQ(words[15].rfind("NCCL_TOPO_FILE=", 0), 0U) << words[15];
    EXPECT_EQ(words[16], "python");
    EXPECT_EQ(strings(launcher(fixed).if_contains("command")).size(), 14U);  // the command list as written
    // -x NCCL_ALGO=Ring is the launcher's own: left, with what to do.
    EXPECT_NE(manual_text(reviewed, "nccl.algo-restricted")
                  .find("remove -x NCCL_ALGO=Ring from the mpirun in container launcher"),
              std::string::npos)
        << manual_text(reviewed, "nccl.algo-restricted");
    expect_settled(fixed);
}

TEST(MpiLauncherPatch, OpenMpiInBashCIsPatchedInsideTheScript) {
    const auto objects = fixture("mpijob-openmpi-bash-c.yaml");
    ASSERT_EQ(objects.size(), 1U);
    const WorkloadReview reviewed = review(objects[0]);
    ASSERT_TRUE(fired(reviewed, "topo.required"));
    EXPECT_FALSE(patches_worker_env(reviewed));
    const json::value fixed = patched(objects[0], reviewed);
    const std::string script = argv(launcher(fixed)).at(2);
    EXPECT_NE(script.find("-x NCCL_NET_PLUGIN=none -x PATH -x NCCL_TOPO_FILE="), std::string::npos) << script;
    // Nothing else of the script changes.
    EXPECT_NE(script.find(" \\\n  python /workspace/train.py --data '/data/my set'\n"), std::string::npos) << script;
    EXPECT_EQ(argv(launcher(fixed)).size(), 3U);
    expect_settled(fixed);
}

TEST(MpiLauncherPatch, HydraGetsMinusGenvInShAndInArgv) {
    const auto objects = fixture("mpijob-hydra.yaml");
    ASSERT_EQ(objects.size(), 2U);

    const WorkloadReview in_sh = review(objects[0]);
    ASSERT_TRUE(fired(in_sh, "topo.required"));
    EXPECT_FALSE(patches_worker_env(in_sh));
    const json::value fixed_sh = patched(objects[0], in_sh);
    const std::string script = argv(launcher(fixed_sh)).at(2);
    EXPECT_NE(script.find("-genv I_MPI_DEBUG 5 -genv NCCL_TOPO_FILE "), std::string::npos) << script;
    EXPECT_TRUE(script.ends_with(" python /workspace/train.py")) << script;
    EXPECT_NE(manual_text(in_sh, "nccl.algo-restricted")
                  .find("remove -genv NCCL_ALGO Ring from the mpiexec.hydra in container launcher"),
              std::string::npos)
        << manual_text(in_sh, "nccl.algo-restricted");
    expect_settled(fixed_sh);

    const WorkloadReview in_argv = review(objects[1]);
    ASSERT_TRUE(fired(in_argv, "topo.required"));
    EXPECT_FALSE(patches_worker_env(in_argv));
    const json::value fixed_argv = patched(objects[1], in_argv);
    const auto words = argv(launcher(fixed_argv));
    ASSERT_EQ(words.size(), 13U);
    EXPECT_EQ(words[8], "-genv");
    EXPECT_EQ(words[9], "NCCL_TOPO_FILE");
    EXPECT_EQ(words[11], "python");
    expect_settled(fixed_argv);
}

TEST(MpiLauncherPatch, WithoutOneLauncherLineTheWorkerEnvIsPatchedAsBefore) {
    // Two mpirun lines: which one starts the ranks is not told, so the fix
    // stays in the worker's env.
    auto objects = fixture("mpijob-openmpi-argv.yaml");
    ASSERT_EQ(objects.size(), 1U);
    json::value job = objects[0];
    json::object& container = job.at_pointer("/spec/mpiReplicaSpecs/Launcher/template/spec/containers/0").as_object();
    container["command"] = json::array{"/bin/sh", "-c",
                                       "mpirun -np 8 -x NCCL_NET_PLUGIN=none warmup\nmpirun -np 16 -x "
                                       "NCCL_NET_PLUGIN=none python train.py"};
    container.erase("args");
    const WorkloadReview reviewed = review(job);
    ASSERT_TRUE(fired(reviewed, "topo.required"));
    EXPECT_TRUE(patches_worker_env(reviewed)) << json::serialize(reviewed.patch);
    EXPECT_EQ(argv(launcher(patched(job, reviewed))), argv(container));
}

}  // namespace
}  // namespace launchguard::kubernetes
