// pyxis --container-mounts lists of which a part is computed at run time:
// the literal entries still count, and an entry computed at run time makes
// unknown only the paths it could cover.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/profile_loader.h"
#include "slurm_script/script_launch.h"
#include "slurm_script/script_review.h"
#include "unit/slurm_script/script_review_support.h"

namespace launchguard::slurm_script {
namespace {

const std::string kTopo = "/opt/microsoft/ndv5-topo.xml";

// The shape of a real Azure job: the topology file mounted next to a data
// directory that the submitting shell names.
std::string azure_script(const std::string& mounts) {
    return "#!/bin/bash\n"
           "#SBATCH --nodes=2\n"
           "#SBATCH --gpus-per-node=8\n"
           "export NCCL_TOPO_FILE=" +
           kTopo +
           "\n"
           "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 --container-env=NCCL_TOPO_FILE \\\n"
           "  --container-mounts=\"" +
           mounts + "\" python train.py\n";
}

ScriptReview review_on_ndv5(const std::string& text, const std::string& profile_name = "azure-ndv5") {
    return testing::review_under(text, profile_name);
}

std::vector<std::string> rules_fired(const ScriptReview& r) {
    std::vector<std::string> rules;
    for (const auto& f : r.report.findings) rules.push_back(f.rule);
    return rules;
}

bool has_note(const ScriptReview& r, const std::string& part) {
    return std::any_of(r.report.unknowns.begin(), r.report.unknowns.end(),
                       [&](const Unknown& u) { return u.reason.find(part) != std::string::npos; });
}

TEST(ContainerMounts, ALiteralEntryCountsBesideOneComputedAtRunTime) {
    ScriptReview r = review_on_ndv5(azure_script(kTopo + ":" + kTopo + ",$DATA:$DATA"));
    EXPECT_TRUE(rules_fired(r).empty()) << ::testing::PrintToString(rules_fired(r));
    EXPECT_EQ(r.report.decision, Decision::allow);
    EXPECT_EQ(r.steps[0].launch.context.files->stat(kTopo).kind, FileKind::regular);
    EXPECT_TRUE(has_note(r, "--container-mounts entry $DATA:$DATA is computed at run time"));
}

TEST(ContainerMounts, WithoutTheRunTimeEntryTheVerdictIsTheSame) {
    ScriptReview with = review_on_ndv5(azure_script(kTopo + ":" + kTopo + ",$DATA:$DATA"));
    ScriptReview without = review_on_ndv5(azure_script(kTopo + ":" + kTopo));
    EXPECT_EQ(with.report.decision, without.report.decision);
    EXPECT_EQ(rules_fired(with), rules_fired(without));
}

TEST(ContainerMounts, AMissingTopologyMountStillBlocksBesideARunTimeEntryThatCannotCoverIt) {
    // $DATA is mounted under /data: it cannot provide /opt/microsoft/....
    ScriptReview r = review_on_ndv5(azure_script("$DATA:/data/$USER"));
    auto rules = rules_fired(r);
    EXPECT_NE(std::find(rules.begin(), rules.end(), "topo.required"), rules.end()) << ::testing::PrintToString(rules);
    EXPECT_EQ(r.report.decision, Decision::block);
}

TEST(ContainerMounts, ARunTimeDestinationMakesWhatItCouldCoverUnknownNotMissing) {
    // Without the literal entry the file may come from $EXTRA's mount: unknown, never missing.
    ScriptReview r = review_on_ndv5(azure_script("$EXTRA:$EXTRA"));
    FileInfo info = r.steps[0].launch.context.files->stat(kTopo);
    EXPECT_EQ(info.kind, FileKind::unknown);
    EXPECT_NE(info.detail.find("$EXTRA:$EXTRA"), std::string::npos) << info.detail;
    EXPECT_EQ(r.report.decision, Decision::allow) << ::testing::PrintToString(rules_fired(r));
    // A path under the literal prefix of a run-time destination is unknown; /var/run is not under it.
    ScriptReview prefixed = review_on_ndv5(azure_script("$EXTRA:/opt/$SUB"));
    EXPECT_EQ(prefixed.steps[0].launch.context.files->stat(kTopo).kind, FileKind::unknown);
    EXPECT_EQ(prefixed.steps[0].launch.context.files->stat("/var/run/x").kind, FileKind::missing);
}

TEST(ContainerMounts, ARunTimeSourceAtALiteralDestinationIsUnknownThere) {
    ScriptReview r = review_on_ndv5(azure_script("$TOPO_DIR/topo.xml:" + kTopo));
    FileInfo info = r.steps[0].launch.context.files->stat(kTopo);
    EXPECT_EQ(info.kind, FileKind::unknown);
    EXPECT_NE(info.detail.find("source is computed at run time"), std::string::npos) << info.detail;
    EXPECT_EQ(r.report.decision, Decision::allow) << ::testing::PrintToString(rules_fired(r));
}

TEST(ContainerMounts, AListOfUnknownShapeMayMountAnything) {
    ScriptReview r = review_on_ndv5(
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
        "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 --container-mounts=$(cat mounts.txt) python t.py\n");
    EXPECT_EQ(r.steps[0].launch.context.files->stat(kTopo).kind, FileKind::unknown);
    EXPECT_EQ(r.steps[0].launch.context.files->stat("/var/run/nvidia-topologyd/virtualTopology.xml").kind,
              FileKind::unknown);
    EXPECT_EQ(r.report.decision, Decision::allow) << ::testing::PrintToString(rules_fired(r));
}

TEST(ContainerMounts, EntriesKeepTheirRunTimePartsAsWritten) {
    std::vector<RuntimePart> parts{{std::string("/a:/a,").size(), "$DATA"}, {std::string("/a:/a,:").size(), "$DATA"}};
    auto mounts = parse_container_mounts("/a:/a,:", parts);
    ASSERT_EQ(mounts.size(), 2U);
    EXPECT_TRUE(mounts[0].source_known && mounts[0].target_known);
    EXPECT_EQ(mounts[0].target, "/a");
    EXPECT_FALSE(mounts[1].source_known);
    EXPECT_FALSE(mounts[1].target_known);
    EXPECT_EQ(mounts[1].target, "");
    EXPECT_EQ(mounts[1].written, "$DATA:$DATA");

    // "/data/$X:/mnt/$X:ro": the literal text before each part is kept.
    std::vector<RuntimePart> inner{{6, "$X"}, {12, "$X"}};
    auto partial = parse_container_mounts("/data/:/mnt/:ro", inner);
    ASSERT_EQ(partial.size(), 1U);
    EXPECT_EQ(partial[0].source, "/data/");
    EXPECT_EQ(partial[0].target, "/mnt/");
    EXPECT_FALSE(partial[0].target_known);
    EXPECT_TRUE(partial[0].readonly);
    EXPECT_EQ(partial[0].written, "/data/$X:/mnt/$X:ro");
}

TEST(ContainerMounts, PatchedAddsNoSecondMountOfAMountedFile) {
    // The file is mounted, but NCCL_TOPO_FILE names another path: the fix
    // sets the variable and does not mount the file a second time.
    std::string script =
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n"
        "export NCCL_TOPO_FILE=/opt/other.xml\n"
        "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 --container-env=NCCL_TOPO_FILE "
        "--container-mounts=\"" +
        kTopo + ":" + kTopo + ",$DATA:$DATA\" python train.py\n";
    ScriptReview r = review_on_ndv5(script);
    for (const auto& step : r.steps) {
        for (const auto& op : step.fixes.ops) {
            EXPECT_FALSE(op.kind == RemediationOp::Kind::mount_file && op.container_path == kTopo)
                << fix_in_script_terms(op, step.fixes);
        }
    }
    auto patched = patched_script(r);
    ASSERT_TRUE(patched) << patched.error().to_string();
    std::size_t first = patched->find(kTopo + ":" + kTopo);
    ASSERT_NE(first, std::string::npos);
    EXPECT_EQ(patched->find(kTopo + ":" + kTopo, first + 1), std::string::npos) << *patched;
}

}  // namespace
}  // namespace launchguard::slurm_script
