// Batch scripts that launch with an MPI launcher (Open MPI's mpirun, the
// Hydra mpiexec of MPICH and Intel MPI) straight from the batch step, or
// inside srun: judged as the same variables set for srun would be, one
// launch per line, with fixes in the launcher's own syntax; steps that run no
// NCCL program; and conditions the #SBATCH lines decide.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/profile_loader.h"
#include "slurm_script/script_review.h"
#include "unit/slurm_script/script_review_support.h"

namespace launchguard::slurm_script {
namespace {

ScriptReview review_on_h100(const std::string& text, const std::string& profile_name = "h100-cx7-ib") {
    return testing::review_under(text, profile_name);
}

std::vector<std::string> fired_sorted(const ScriptReview& r) {
    std::vector<std::string> rules;
    for (const auto& f : r.report.findings) rules.push_back(f.rule + ":" + std::string(to_string(f.action)));
    std::sort(rules.begin(), rules.end());
    return rules;
}

bool fires(const ScriptReview& r, const std::string& rule) {
    return std::any_of(r.report.findings.begin(), r.report.findings.end(),
                       [&](const Finding& f) { return f.rule == rule; });
}

const std::string kTwoNodes = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n";

TEST(MpiLaunch, EachLauncherFormIsJudgedAsTheSameVariableExportedForSrun) {
    const std::vector<std::string> forms = {
        "mpirun -np 16 -x NCCL_IB_DISABLE=1 ./all_reduce_perf\n",
        "export NCCL_IB_DISABLE=1\nmpirun -np 16 -x NCCL_IB_DISABLE ./all_reduce_perf\n",
        "mpirun --mca pml ucx --mca btl ^openib -x NCCL_IB_DISABLE=1 -N 8 ./all_reduce_perf -b 8\n",
        "/opt/amazon/openmpi/bin/mpirun --map-by ppr:8:node -x NCCL_IB_DISABLE=1 python train.py\n",
        "timeout 2h env OMP_NUM_THREADS=1 mpiexec -n 16 -x NCCL_IB_DISABLE=1 ./a\n",
        "mpiexec.hydra -genv NCCL_IB_DISABLE 1 -ppn 8 ./a\n",
        "mpiexec -n 16 -env NCCL_IB_DISABLE 1 ./a\n",
        "prterun --np=16 -x NCCL_IB_DISABLE=1 ./a\n",
        "orterun -x NCCL_IB_DISABLE=1 ./a\n",
        "export NCCL_IB_DISABLE=1\nmpiexec.hydra -genvall -n 16 ./a\n",
    };
    const ScriptReview as_srun = review_on_h100(kTwoNodes + "export NCCL_IB_DISABLE=1\nsrun ./a\n");
    ASSERT_TRUE(fires(as_srun, "net.ib-disabled"));
    for (const auto& form : forms) {
        ScriptReview r = review_on_h100(kTwoNodes + form);
        ASSERT_EQ(r.steps.size(), 1U) << form;
        EXPECT_EQ(fired_sorted(r), fired_sorted(as_srun)) << form;
    }
    // Without the variable, the same lines stay quiet.
    for (const std::string quiet : {"mpirun -np 16 ./a\n", "mpirun -x NCCL_IB_DISABLE ./a\n",
                                    "export NCCL_IB_DISABLE=1\nmpiexec.hydra -genvnone -n 16 ./a\n",
                                    "export NCCL_IB_DISABLE=1\nmpiexec -genvexcl NCCL_IB_DISABLE -n 16 ./a\n"}) {
        EXPECT_FALSE(fires(review_on_h100(kTwoNodes + quiet), "net.ib-disabled")) << quiet;
    }
}

TEST(MpiLaunch, TheLaunchersValueOverridesTheExport) {
    ScriptReview r = review_on_h100(kTwoNodes + "export NCCL_DEBUG=INFO\nmpirun -x NCCL_DEBUG=WARN ./a\n");
    ASSERT_EQ(r.steps.size(), 1U);
    EXPECT_EQ(r.steps[0].launch.context.env.value().at("NCCL_DEBUG"), "WARN");
    EXPECT_FALSE(fires(r, "nccl.debug-verbose"));
    EXPECT_TRUE(fires(review_on_h100(kTwoNodes + "export NCCL_DEBUG=WARN\nmpirun -x NCCL_DEBUG=INFO ./a\n"),
                      "nccl.debug-verbose"));
    EXPECT_TRUE(fires(review_on_h100(kTwoNodes + "mpiexec.hydra -genv NCCL_DEBUG INFO ./a\n"), "nccl.debug-verbose"));
}

TEST(MpiLaunch, AForwardedVariableTheScriptDoesNotExportPassesNothing) {
    ScriptReview r = review_on_h100(kTwoNodes + "NCCL_IB_DISABLE=1\nmpirun -x NCCL_IB_DISABLE ./a\n");
    EXPECT_FALSE(fires(r, "net.ib-disabled"));
    EXPECT_TRUE(std::any_of(r.report.unknowns.begin(), r.report.unknowns.end(), [](const Unknown& u) {
        return u.reason.find("mpirun -x NCCL_IB_DISABLE passes nothing") != std::string::npos;
    }));
}

TEST(MpiLaunch, ALauncherInsideSrunOrSrunInsideALauncherIsOneLaunch) {
    for (const std::string line :
         {"srun --mpi=none -N 2 mpirun -x NCCL_IB_DISABLE=1 ./a\n", "mpirun -x NCCL_IB_DISABLE=1 srun ./a\n",
          "srun --ntasks-per-node=1 /usr/bin/mpiexec.hydra -genv NCCL_IB_DISABLE 1 ./a\n"}) {
        ScriptReview r = review_on_h100(kTwoNodes + line);
        ASSERT_EQ(r.steps.size(), 1U) << line;
        EXPECT_TRUE(r.steps[0].launch.label.starts_with("srun with mpi")) << r.steps[0].launch.label;
        EXPECT_TRUE(fires(r, "net.ib-disabled")) << line;
        EXPECT_EQ(r.script.steps[0].program, "./a") << line;
    }
    // srun's --export=NONE drops what mpirun passed it.
    EXPECT_FALSE(
        fires(review_on_h100(kTwoNodes + "mpirun -x NCCL_IB_DISABLE=1 srun --export=NONE ./a\n"), "net.ib-disabled"));
}

TEST(MpiLaunch, TheOptionsTellTheShapeWhereTheyCan) {
    auto shape = [](const std::string& line) {
        return review_on_h100(kTwoNodes + line).steps.at(0).launch.context.job;
    };
    EXPECT_EQ(shape("mpirun -np 12 ./a\n").tasks.value(), 12);
    EXPECT_EQ(shape("mpirun --np=12 ./a\n").tasks.value(), 12);
    EXPECT_EQ(shape("mpirun -N 4 ./a\n").tasks.value(), 8);
    EXPECT_EQ(shape("mpirun --map-by ppr:8:node ./a\n").tasks.value(), 16);
    EXPECT_EQ(shape("mpiexec.hydra -ppn 8 ./a\n").tasks.value(), 16);
    EXPECT_EQ(shape("mpirun -H n1:8,n2:8,n3:8 -N 8 ./a\n").nodes.value(), 3);
    EXPECT_EQ(shape("mpirun -H n1:8,n2:8,n3:8 -N 8 ./a\n").tasks.value(), 24);
    EXPECT_FALSE(shape("mpirun --hostfile hosts.txt ./a\n").nodes.is_known());
    EXPECT_FALSE(shape("mpiexec.hydra -f $HOSTS ./a\n").nodes.is_known());
    // The allocation's nodes when the launcher names none.
    EXPECT_EQ(shape("mpirun ./a\n").nodes.value(), 2);
}

TEST(MpiLaunch, OptionValuesAreNotTheProgram) {
    for (const std::string line : {"mpirun --mca pml ucx -x A=1 --bind-to none ./a -b 8\n",
                                   "mpirun -np 2 --hostfile h -wdir /tmp --report-bindings ./a -b 8\n",
                                   "mpiexec.hydra -bootstrap slurm -genv A 1 -genvlist B,C ./a -b 8\n"}) {
        ScriptReview r = review_on_h100(kTwoNodes + line);
        ASSERT_EQ(r.script.steps.size(), 1U) << line;
        EXPECT_EQ(r.script.steps[0].program, "./a") << line;
        EXPECT_EQ(r.script.steps[0].command, (std::vector<std::string>{"./a", "-b", "8"})) << line;
    }
}

TEST(MpiLaunch, PatchedWritesTheLaunchersOwnSyntaxOnce) {
    struct Row {
        std::string line;
        std::string patched;
    };
    const Row rows[] = {
        {"mpirun -np 16 -x NCCL_DEBUG=INFO ./a\n", "mpirun -np 16 -x NCCL_DEBUG=INFO -x NCCL_DEBUG=WARN ./a\n"},
        {"mpiexec.hydra -genv NCCL_DEBUG INFO -n 16 ./a\n",
         "mpiexec.hydra -genv NCCL_DEBUG INFO -n 16 -genv NCCL_DEBUG WARN ./a\n"},
        {"export NCCL_DEBUG=INFO\nmpirun ./a\n", "export NCCL_DEBUG=INFO\nmpirun -x NCCL_DEBUG=WARN ./a\n"},
        // After a `--` the words are the program's: the option goes before it.
        {"mpirun -np 16 -x NCCL_DEBUG=INFO -- ./a\n", "mpirun -np 16 -x NCCL_DEBUG=INFO -x NCCL_DEBUG=WARN -- ./a\n"},
        {"mpirun -x NCCL_DEBUG=INFO -- srun ./a\n", "mpirun -x NCCL_DEBUG=INFO -x NCCL_DEBUG=WARN -- srun ./a\n"},
    };
    for (const auto& row : rows) {
        ScriptReview r = review_on_h100(kTwoNodes + "#SBATCH --exclusive\n" + row.line);
        ASSERT_TRUE(fires(r, "nccl.debug-verbose")) << row.line;
        // A warning has no patch of its own: ask for the fix as the profile's patch would.
        std::vector<StepFixes> fixes;
        for (const auto& step : r.steps) {
            StepFixes with = step.fixes;
            with.ops = {RemediationOp::set_env("NCCL_DEBUG", "WARN")};
            fixes.push_back(with);
        }
        auto patched = apply_fixes(r.script, fixes);
        ASSERT_TRUE(patched) << patched.error().to_string();
        EXPECT_EQ(patched.value(), kTwoNodes + "#SBATCH --exclusive\n" + row.patched);
        EXPECT_FALSE(fires(review_on_h100(patched.value()), "nccl.debug-verbose")) << patched.value();
        EXPECT_EQ(fix_in_script_terms(fixes[0].ops[0], fixes[0]).substr(0, 2),
                  row.line.find("hydra") != std::string::npos ? "-g" : "-x");
    }
    // A value the shell would split is quoted, as for export.
    ScriptReview r = review_on_h100(kTwoNodes + "mpirun ./a\n");
    StepFixes with = r.steps.at(0).fixes;
    with.ops = {RemediationOp::set_env("NCCL_TOPO_FILE", "/opt/a b/$(id).xml")};
    EXPECT_EQ(apply_fixes(r.script, {with}).value(), kTwoNodes + "mpirun -x NCCL_TOPO_FILE='/opt/a b/$(id).xml' ./a\n");
}

TEST(MpiLaunch, AnOptionWithoutItsValueLeavesNoPlaceToAddOne) {
    // An option added after `-genv NAME` would be read as its value.
    for (const std::string line : {"mpiexec.hydra -n 2 -genv NCCL_DEBUG\n", "mpirun -np 2 -x\n"}) {
        ScriptReview r = review_on_h100(kTwoNodes + line);
        ASSERT_EQ(r.script.steps.size(), 1U) << line;
        ASSERT_TRUE(r.script.steps[0].mpi.has_value()) << line;
        EXPECT_FALSE(r.script.steps[0].mpi->complete) << line;
        EXPECT_EQ(r.script.steps[0].mpi_options_line, 0) << line;
    }
    EXPECT_EQ(review_on_h100(kTwoNodes + "mpirun -np 2\n").script.steps.at(0).mpi_options_line, 4);
    // A backslash that ends the script would escape what follows it into its word.
    EXPECT_EQ(review_on_h100(kTwoNodes + "mpirun -np 2 -\\").script.steps.at(0).mpi_options_line, 0);
    // An operator written without a blank after the options: words added there would join it.
    EXPECT_EQ(review_on_h100(kTwoNodes + "mpirun -<<<<").script.steps.at(0).mpi_options_line, 0);
    EXPECT_EQ(review_on_h100(kTwoNodes + "mpirun -np 2; true\n").script.steps.at(0).mpi_options_line, 4);
}

TEST(MpiLaunch, AVariableTheLauncherSetsIsRemovedFromItsOptionsNotUnsetBeforeIt) {
    const std::string job = kTwoNodes + "mpirun -np 16 -x NCCL_IB_DISABLE=1 ./a\n";
    ScriptReview r = review_on_h100(job);
    ASSERT_TRUE(fires(r, "net.ib-disabled"));
    const StepFixes& fixes = r.steps.at(0).fixes;
    ASSERT_EQ(fixes.ops.size(), 1U);
    EXPECT_EQ(fix_in_script_terms(fixes.ops[0], fixes).substr(0, 56),
              "remove -x NCCL_IB_DISABLE=1 from the mpirun on line 4 (i");
    // --patched cannot carry it: the script stays as written, never half-fixed.
    EXPECT_EQ(patched_script(r).value(), job);
    // Exported before the launcher and passed by name: unset before it fixes it.
    ScriptReview exported = review_on_h100(kTwoNodes + "export NCCL_IB_DISABLE=1\nmpirun -x NCCL_IB_DISABLE ./a\n");
    auto patched = patched_script(exported);
    ASSERT_TRUE(patched) << patched.error().to_string();
    EXPECT_FALSE(fires(review_on_h100(patched.value()), "net.ib-disabled")) << patched.value();
}

TEST(NcclLaunchesOnly, AStepThatRunsNoNcclProgramIsNotJudgedByNcclRules) {
    const std::string job = kTwoNodes + "export NCCL_DEBUG=INFO\n";
    for (const std::string step :
         {"srun --ntasks-per-node=1 rm -rf /dev/shm/nccl-*\n", "srun hostname\n",
          "srun -N2 env X=1 /usr/bin/nvidia-smi -L\n", "mpirun -N 1 mkdir -p /tmp/x\n", "srun sleep 60\n"}) {
        ScriptReview r = review_on_h100(job + step);
        EXPECT_FALSE(fires(r, "nccl.debug-verbose")) << step;
        EXPECT_TRUE(std::any_of(r.report.not_applicable.begin(), r.report.not_applicable.end(), [](const Unknown& u) {
            return u.rule == "nccl.debug-verbose" && u.reason.find("starts no NCCL program") != std::string::npos;
        })) << step;
    }
    for (const std::string step : {"srun python train.py\n", "srun ./all_reduce_perf\n", "srun bash -c 'rm x; ./a'\n",
                                   "srun numactl -N 0 ./a\n"}) {
        EXPECT_TRUE(fires(review_on_h100(job + step), "nccl.debug-verbose")) << step;
    }
    // Rules that judge more than NCCL still judge a utility step.
    ScriptReview cleanup = review_on_h100(kTwoNodes + "export NCCL_IB_DISABLE=1\nsrun rm -rf /dev/shm/nccl-*\n");
    EXPECT_GT(cleanup.report.rules_evaluated, 0);
}

TEST(ScriptConditions, DecidedFromTheSbatchLines) {
    struct Row {
        const char* condition;
        const char* value;  // "" when undecided
    };
    const Row rows[] = {
        {"[[ $SLURM_NNODES -gt 1 ]] && export A=x || export A=y", "x"},
        {"[[ $SLURM_NNODES -ge 3 ]] && export A=x || export A=y", "y"},
        {"[[ $SLURM_NNODES -eq 2 && $SLURM_NTASKS -lt 32 ]] && export A=x || export A=y", "x"},
        {"[[ $SLURM_NNODES -eq 1 || $SLURM_NTASKS -lt 32 ]] && export A=x || export A=y", "x"},
        {"[ \"$SLURM_NNODES\" -gt 1 -a \"$SLURM_NTASKS\" -ge 16 ] && export A=x || export A=y", "x"},
        {"test $SLURM_JOB_NUM_NODES -lt 2 && export A=x || export A=y", "y"},
        {"(( SLURM_NNODES > 1 )) && export A=x || export A=y", "x"},
        {"(( $SLURM_NNODES == 1 )) && export A=x || export A=y", "y"},
        {"if (( SLURM_NNODES > 1 && SLURM_NTASKS >= 16 )); then export A=x; else export A=y; fi", "x"},
        {"[[ $UNSEEN -gt 1 ]] && export A=x || export A=y", ""},
        {"(( $(nproc) > 1 )) && export A=x || export A=y", ""},
        {"[[ $SLURM_NNODES -gt 1 ]] && ./setup.sh && export A=x || export A=y", ""},
    };
    for (const auto& row : rows) {
        ScriptReview r = review_on_h100("#!/bin/bash\n#SBATCH --nodes 2\n#SBATCH --ntasks=16\n" +
                                        std::string(row.condition) + "\nsrun ./a\n");
        ASSERT_EQ(r.script.steps.size(), 1U) << row.condition;
        const auto& env = r.script.steps[0].environment;
        ASSERT_EQ(env.count("A"), 1U) << row.condition;
        EXPECT_EQ(env.at("A").value.value_or(""), row.value) << row.condition;
    }
}

}  // namespace
}  // namespace launchguard::slurm_script
