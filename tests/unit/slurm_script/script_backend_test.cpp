// A batch script's srun step that selects gloo or mpi is not judged by the
// rules that judge NCCL; one that selects NCCL, or nothing, still is.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/profile_loader.h"
#include "slurm_script/script_review.h"
#include "unit/slurm_script/script_review_support.h"

namespace launchguard::slurm_script {
namespace {

ScriptReview backend_review(const std::string& text) { return testing::review_under(text, "azure-ndv5"); }

bool has_finding(const ScriptReview& r, const std::string& rule) {
    return std::any_of(r.report.findings.begin(), r.report.findings.end(),
                       [&](const Finding& f) { return f.rule == rule; });
}

bool not_applicable(const ScriptReview& r, const std::string& rule) {
    return std::any_of(r.report.not_applicable.begin(), r.report.not_applicable.end(),
                       [&](const Unknown& n) { return n.rule == rule; });
}

// No topology file in the container: topo.required blocks an NCCL job on azure-ndv5.
const std::string kTwoNodeHeader = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n";
const std::string kSrun = "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 ";

TEST(ScriptBackend, GlooStepIsNotJudgedByNcclRules) {
    ScriptReview gloo = backend_review(kTwoNodeHeader + kSrun + "python train.py --backend gloo\n");
    EXPECT_FALSE(has_finding(gloo, "topo.required"));
    EXPECT_TRUE(not_applicable(gloo, "topo.required"));
    EXPECT_EQ(gloo.report.decision, Decision::allow);
    ASSERT_TRUE(gloo.steps[0].launch.context.comm_backend);
    EXPECT_EQ(*gloo.steps[0].launch.context.comm_backend, CommBackend::gloo);
}

TEST(ScriptBackend, AnExportedVariableTheStepReadsSelectsIt) {
    ScriptReview mpi = backend_review(kTwoNodeHeader + "export DIST_BACKEND=mpi\n" + kSrun +
                                      "python train.py --backend=$DIST_BACKEND\n");
    EXPECT_TRUE(not_applicable(mpi, "topo.required"));
    ScriptReview inner =
        backend_review(kTwoNodeHeader + kSrun + "bash -c \"python -c 'd.init_process_group(\\\"gloo\\\")'\"\n");
    EXPECT_TRUE(not_applicable(inner, "topo.required"));
}

TEST(ScriptBackend, NcclOrNoSelectionKeepsTheNcclRules) {
    ScriptReview nccl = backend_review(kTwoNodeHeader + kSrun + "python train.py --backend nccl\n");
    EXPECT_TRUE(has_finding(nccl, "topo.required"));
    EXPECT_TRUE(nccl.report.not_applicable.empty());
    ScriptReview unstated = backend_review(kTwoNodeHeader + kSrun + "python train.py\n");
    EXPECT_TRUE(has_finding(unstated, "topo.required"));
    EXPECT_FALSE(unstated.steps[0].launch.context.comm_backend);
}

}  // namespace
}  // namespace launchguard::slurm_script
