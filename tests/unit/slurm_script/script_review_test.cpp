// review_script(): batch scripts judged as launches — small scripts written
// for each rule that can decide from a script (fires / stays quiet), the
// container view pyxis options describe, fixes in the script's terms, and
// the real scripts of the public fixtures' slurm/ (support/shared_fixtures.h)
// with their findings pinned.
#include "slurm_script/script_review.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/profile_loader.h"
#include "support/azure_fixtures.h"

namespace launchguard::slurm_script {
namespace {

using testing::fixture_text;

Profile profile_named(const std::string& name) {
    auto profile = load_profile(name);
    EXPECT_TRUE(profile) << profile.error().to_string();
    return profile.value();
}

ScriptReview review(const std::string& text, const std::string& profile = "default") {
    auto result = review_script(text, "job.sbatch", profile_named(profile), Mode::enforce);
    EXPECT_TRUE(result) << result.error().to_string();
    return result ? result.value() : ScriptReview{};
}

const Finding* finding(const ScriptReview& r, const std::string& rule) {
    auto it = std::find_if(r.report.findings.begin(), r.report.findings.end(),
                           [&](const Finding& f) { return f.rule == rule; });
    return it == r.report.findings.end() ? nullptr : &*it;
}

std::vector<std::string> fired(const ScriptReview& r) {
    std::vector<std::string> rules;
    for (const auto& f : r.report.findings) rules.push_back(f.rule + ":" + std::string(to_string(f.action)));
    return rules;
}

std::string evidence(const Finding& f, const std::string& key) {
    for (const auto& [k, v] : f.evidence) {
        if (k == key) return v;
    }
    return "";
}

std::vector<std::string> script_fixes(const ScriptReview& r) {
    std::vector<std::string> out;
    for (const auto& step : r.steps) {
        for (const auto& op : step.fixes.ops) out.push_back(fix_in_script_terms(op, step.fixes));
    }
    return out;
}

const std::string kHeader = "#!/bin/bash\n#SBATCH --nodes=64\n#SBATCH --gpus-per-node=8\n";

// ---------------------------------------------------------------- shape and net.qps-low

TEST(ScriptReview, ShapeComesFromDirectivesAndSrun) {
    ScriptReview r = review(kHeader + "srun -N 2 ./a\nsrun ./b\n");
    ASSERT_EQ(r.steps.size(), 2U);
    EXPECT_EQ(r.steps[0].launch.context.job.total_gpus.value(), 16);
    EXPECT_EQ(r.steps[1].launch.context.job.total_gpus.value(), 512);
    EXPECT_EQ(r.steps[1].launch.context.job.nodes.source(), "line 2: --nodes=64");
    ScriptReview gres = review("#SBATCH -N 4 --gres=gpu:h100:8\nsrun ./a\n");
    EXPECT_EQ(gres.steps[0].launch.context.job.total_gpus.value(), 32);
    ScriptReview none = review("#SBATCH -N 4\nsrun ./a\n");
    EXPECT_FALSE(none.steps[0].launch.context.job.total_gpus.is_known());
}

TEST(ScriptReview, QpsLowFiresAt512GpusBeforeAnyNodeIsAllocated) {
    ScriptReview r = review(kHeader + "srun ./train\n", "b300-cx8");
    const Finding* f = finding(r, "net.qps-low");
    ASSERT_NE(f, nullptr) << ::testing::PrintToString(fired(r));
    EXPECT_EQ(evidence(*f, "step"), "srun on line 4");
    auto fixes = script_fixes(r);
    EXPECT_NE(std::find(fixes.begin(), fixes.end(), "export NCCL_IB_QPS_PER_CONNECTION=4  (before the srun on line 4)"),
              fixes.end())
        << ::testing::PrintToString(fixes);

    EXPECT_EQ(
        finding(review(kHeader + "export NCCL_IB_QPS_PER_CONNECTION=4\nsrun ./train\n", "b300-cx8"), "net.qps-low"),
        nullptr);
    EXPECT_EQ(finding(review("#SBATCH --nodes=2 --gpus-per-node=8\nsrun ./train\n", "b300-cx8"), "net.qps-low"),
              nullptr);
}

// ---------------------------------------------------------------- the container view

const std::string kPyxis = "#!/bin/bash\n#SBATCH --nodes=2 --gpus-per-node=8\n";

TEST(ScriptReview, MissingTopologyMountIsAFindingWithTheMountAsFix) {
    ScriptReview r =
        review(kPyxis + "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 python train.py\n", "azure-ndv5");
    const Finding* f = finding(r, "topo.not-propagated");
    ASSERT_NE(f, nullptr) << ::testing::PrintToString(fired(r));
    EXPECT_EQ(f->action, Action::block);
    auto fixes = script_fixes(r);
    EXPECT_EQ(fixes.size(), 2U) << ::testing::PrintToString(fixes);  // topo.required proposes the same two
    EXPECT_NE(std::find(fixes.begin(), fixes.end(),
                        "--container-mounts=/opt/microsoft/ndv5-topo.xml:/opt/microsoft/ndv5-topo.xml:ro  (on the srun "
                        "on line 3)"),
              fixes.end())
        << ::testing::PrintToString(fixes);
    EXPECT_NE(std::find(fixes.begin(), fixes.end(),
                        "export NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml  (before the srun on line 3, which gets "
                        "--container-env=NCCL_TOPO_FILE so the image's ENV cannot override it)"),
              fixes.end())
        << ::testing::PrintToString(fixes);

    // The patched script carries both, and reviewing it again finds nothing to mount.
    std::string patched = patched_script(r).value();
    EXPECT_NE(patched.find("export NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\nsrun "
                           "--container-mounts=/opt/microsoft/ndv5-topo.xml:/opt/microsoft/ndv5-topo.xml:ro "
                           "--container-env=NCCL_TOPO_FILE --container-image="),
              std::string::npos)
        << patched;
    ScriptReview again = review(patched, "azure-ndv5");
    EXPECT_EQ(finding(again, "topo.not-propagated"), nullptr) << ::testing::PrintToString(fired(again));
    EXPECT_EQ(finding(again, "topo.required"), nullptr) << ::testing::PrintToString(fired(again));
}

TEST(ScriptReview, MountedTopologyFileIsQuiet) {
    ScriptReview r = review(kPyxis +
                                "export NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\n"
                                "srun --container-image=img --container-mounts=/opt/microsoft:/opt/microsoft:ro ./a\n",
                            "azure-ndv5");
    EXPECT_EQ(finding(r, "topo.not-propagated"), nullptr) << ::testing::PrintToString(fired(r));
    EXPECT_EQ(finding(r, "topo.file-missing"), nullptr);
    EXPECT_EQ(finding(r, "topo.required"), nullptr);
}

TEST(ScriptReview, APathNoMountProvidesIsUnknownNotMissing) {
    ScriptReview r = review(kPyxis + "export NCCL_TOPO_FILE=/opt/topo.xml\nsrun --container-image=img ./a\n");
    EXPECT_EQ(finding(r, "topo.file-missing"), nullptr) << ::testing::PrintToString(fired(r));
    const auto& files = *r.steps[0].launch.context.files;
    FileInfo info = files.stat("/opt/topo.xml");
    EXPECT_EQ(info.kind, FileKind::unknown);
    EXPECT_NE(info.detail.find("the image img may carry it"), std::string::npos) << info.detail;
    EXPECT_EQ(files.stat("/var/run/nvidia-topologyd/virtualTopology.xml").kind, FileKind::missing);
    EXPECT_EQ(r.steps[0].launch.context.runtime, Runtime::pyxis);
    EXPECT_EQ(r.steps[0].launch.context.container.image.value(), "img");
}

TEST(ScriptReview, PyxisNeedsAnImageOrANameAndKeepsTheImagesEnv) {
    ScriptReview mounts_only = review(kPyxis + "srun --container-mounts=/opt:/opt ./a\n");
    EXPECT_EQ(mounts_only.steps[0].launch.context.runtime, Runtime::bare);
    ASSERT_FALSE(mounts_only.steps[0].launch.notes.empty());
    EXPECT_EQ(mounts_only.steps[0].launch.notes[0],
              "pyxis ignores --container-mounts without --container-image or --container-name");

    ScriptReview env = review(kPyxis +
                              "export NCCL_IB_HCA=mlx5 NCCL_NET=IB\n"
                              "srun --container-image=img --container-env=NCCL_NET ./a\n");
    ASSERT_EQ(env.steps[0].launch.notes.size(), 1U);
    EXPECT_EQ(env.steps[0].launch.notes[0],
              "the image's ENV beats the job's value under pyxis unless --container-env names the variable; not "
              "named: NCCL_IB_HCA");
}

TEST(ScriptReview, MountEntriesAsPyxisReadsThem) {
    auto mounts = parse_container_mounts("/opt/microsoft:/opt/microsoft:ro+rprivate,/data,/a/:/b/:rw");
    ASSERT_EQ(mounts.size(), 3U);
    EXPECT_TRUE(mounts[0].readonly);
    EXPECT_EQ(mounts[1].source, "/data");
    EXPECT_EQ(mounts[1].target, "/data");
    EXPECT_EQ(mounts[2].target, "/b");
    EXPECT_FALSE(mounts[2].readonly);
}

TEST(ScriptReview, AStepWithoutContainerOptionsRunsBare) {
    ScriptReview r = review(kPyxis + "srun ./a\n", "azure-ndv5");
    EXPECT_EQ(r.steps[0].launch.context.runtime, Runtime::bare);
    EXPECT_EQ(finding(r, "topo.not-propagated"), nullptr) << ::testing::PrintToString(fired(r));
    // The node's own file, by the profile's word.
    EXPECT_EQ(r.steps[0].launch.context.files->stat("/opt/microsoft/ndv5-topo.xml").kind, FileKind::regular);
}

// ---------------------------------------------------------------- environment rules

TEST(ScriptReview, EnvironmentRulesFireOnExportsAndStayQuietOnGoodOnes) {
    // h100-cx7-ib says how many GPUs a node has, so P2P has somewhere to go.
    ScriptReview r = review(kPyxis + "export NCCL_BUFFSIZE=8M NCCL_P2P_DISABLE=1\nsrun ./a\n", "h100-cx7-ib");
    EXPECT_EQ(::testing::PrintToString(fired(r)),
              "{ \"conf.lint:warn\", \"nccl.p2p-disabled:warn\", \"nccl.buffsize-suspicious:warn\" }");
    ScriptReview good = review(kPyxis + "export NCCL_BUFFSIZE=8388608\nsrun ./a\n", "h100-cx7-ib");
    EXPECT_EQ(finding(good, "conf.lint"), nullptr);
    EXPECT_EQ(finding(good, "nccl.p2p-disabled"), nullptr);
}

// One row per rule that decides from what a script exports: the line that
// makes it fire, and a line that keeps it quiet (judged by hand against
// NCCL's behaviour as each rule's `why` in docs/rules.md states it: each
// firing line is a silent slowdown on that profile's hardware).
struct RuleRow {
    const char* rule;
    const char* profile;
    const char* fires;
    const char* quiet;
    Action action;
};

TEST(ScriptReview, EachEnvironmentRuleFiresAndStaysQuiet) {
    const RuleRow rows[] = {
        {"net.gdr-level-low", "h100-cx7-ib", "export NCCL_NET_GDR_LEVEL=LOC", "export NCCL_NET_GDR_LEVEL=PXB",
         Action::warn},
        {"net.gdr-read-off", "h100-cx7-ib", "export NCCL_NET_GDR_READ=0", "export NCCL_NET_GDR_READ=1", Action::warn},
        {"nccl.shm-disabled", "h100-cx7-ib", "export NCCL_SHM_DISABLE=1", "export NCCL_SHM_DISABLE=0", Action::warn},
        {"nccl.cumem-disabled", "gb200-nvl72", "export NCCL_CUMEM_ENABLE=0", "export NCCL_CUMEM_ENABLE=1",
         Action::block},
        {"nccl.algo-restricted", "h100-cx7-ib", "export NCCL_ALGO=Ring", "unset NCCL_ALGO", Action::warn},
        {"nccl.proto-restricted", "h100-cx7-ib", "export NCCL_PROTO=Simple", "unset NCCL_PROTO", Action::warn},
        {"nccl.channels-capped", "h100-cx7-ib", "export NCCL_MAX_NCHANNELS=2", "unset NCCL_MAX_NCHANNELS",
         Action::warn},
        {"topo.file-missing", "h100-cx7-ib", "export NCCL_TOPO_FILE=/var/run/topo.xml",
         "export NCCL_TOPO_FILE=/opt/topo.xml", Action::block},
    };
    for (const auto& row : rows) {
        std::string step = "srun --container-image=img ./a\n";
        ScriptReview fires = review(kPyxis + row.fires + "\n" + step, row.profile);
        const Finding* f = finding(fires, row.rule);
        ASSERT_NE(f, nullptr) << row.rule << ::testing::PrintToString(fired(fires));
        EXPECT_EQ(f->action, row.action) << row.rule;
        EXPECT_EQ(finding(review(kPyxis + row.quiet + "\n" + step, row.profile), row.rule), nullptr) << row.rule;
    }
}

TEST(ScriptReview, IbDisabledInABashCStepIsFound) {
    ScriptReview r = review(kPyxis + "srun bash -c 'export NCCL_IB_DISABLE=1; ./a'\n", "h100-cx7-ib");
    const Finding* f = finding(r, "net.ib-disabled");
    ASSERT_NE(f, nullptr) << ::testing::PrintToString(fired(r));
    auto fixes = script_fixes(r);
    EXPECT_NE(std::find(fixes.begin(), fixes.end(), "unset NCCL_IB_DISABLE  (before the srun on line 3)"), fixes.end())
        << ::testing::PrintToString(fixes);
    EXPECT_EQ(finding(review(kPyxis + "srun ./a\n", "h100-cx7-ib"), "net.ib-disabled"), nullptr);
}

bool has_unknown(const ScriptReview& r, const std::string& text) {
    return std::any_of(r.report.unknowns.begin(), r.report.unknowns.end(),
                       [&](const Unknown& u) { return u.reason.find(text) != std::string::npos; });
}

// ---------------------------------------------------------------- unknowns, per variable

const Unknown* unknown_of(const ScriptReview& r, const std::string& rule) {
    for (const auto& u : r.report.unknowns) {
        if (u.rule == rule) return &u;
    }
    return nullptr;
}

TEST(ScriptReviewUnknowns, WhatMaySetAnyVariableMakesUnsetUnknownNamingTheLine) {
    const std::string header = kPyxis + "export NCCL_IB_HCA=mlx5_0 NCCL_NET_PLUGIN=none\n";
    ScriptReview plain = review(header + "srun ./a\n", "h100-cx7-ib");
    ASSERT_NE(finding(plain, "net.fallback-unguarded"), nullptr) << ::testing::PrintToString(fired(plain));
    for (const std::string construct :
         {"source /etc/profile.d/nccl.sh", ". /etc/profile.d/nccl.sh", "module load nccl/2.21", "eval \"$(ucx env)\"",
          "export $(cat nccl.env | xargs)"}) {
        ScriptReview r = review(header + construct + "\nsrun ./a\n", "h100-cx7-ib");
        EXPECT_EQ(finding(r, "net.fallback-unguarded"), nullptr) << construct;
        const Unknown* u = unknown_of(r, "net.fallback-unguarded");
        ASSERT_NE(u, nullptr) << construct;
        EXPECT_NE(u->reason.find("line 4: "), std::string::npos) << u->reason;
        EXPECT_NE(u->reason.find("may set any variable"), std::string::npos) << u->reason;
        // What the script sets itself is still decided.
        EXPECT_EQ(r.steps[0].launch.context.env.value().at("NCCL_IB_HCA"), "mlx5_0");
    }
}

TEST(ScriptReviewUnknowns, AnUnknownValueMakesOnlyItsOwnVariableUnknown) {
    ScriptReview r = review(
        kPyxis + "export NCCL_IB_QPS_PER_CONNECTION=$(cat /etc/qps) NCCL_NET_PLUGIN=none\nsrun ./a\n", "h100-cx7-ib");
    // The unset-NCCL_NET warning still fires next to it.
    EXPECT_NE(finding(r, "net.fallback-unguarded"), nullptr) << ::testing::PrintToString(fired(r));
    const auto& ctx = r.steps[0].launch.context;
    ASSERT_EQ(ctx.env_unknown.count("NCCL_IB_QPS_PER_CONNECTION"), 1U);
    EXPECT_EQ(ctx.env_unknown.at("NCCL_IB_QPS_PER_CONNECTION"),
              "export on line 3: $(cat /etc/qps) is known only when the job runs");
    EXPECT_TRUE(ctx.env_unread_sources.empty());
}

TEST(ScriptReviewUnknowns, ConditionalExportsAreDecidedOrUnknownNeverDropped) {
    const std::string body =
        "if [[ $SLURM_JOB_NUM_NODES -gt 1 ]]; then\n"
        "  export NCCL_IB_DISABLE=1\n"
        "fi\n"
        "export NCCL_NET_PLUGIN=none\n"
        "srun ./a\n";
    ScriptReview decided = review("#!/bin/bash\n#SBATCH --nodes=2 --gpus-per-node=8\n" + body, "h100-cx7-ib");
    EXPECT_NE(finding(decided, "net.ib-disabled"), nullptr) << ::testing::PrintToString(fired(decided));

    ScriptReview undecided = review(
        "#!/bin/bash\n#SBATCH --nodes=2 --gpus-per-node=8\n"
        "if [[ -f /etc/no-ib ]]; then\n  export NCCL_IB_DISABLE=1\nfi\n"
        "export NCCL_NET_PLUGIN=none\nsrun ./a\n",
        "h100-cx7-ib");
    EXPECT_EQ(finding(undecided, "net.ib-disabled"), nullptr);
    const Unknown* u = unknown_of(undecided, "net.ib-disabled");
    ASSERT_NE(u, nullptr) << ::testing::PrintToString(fired(undecided));
    EXPECT_NE(u->reason.find("inside the if on line 3"), std::string::npos) << u->reason;
    // Other variables stay decided.
    EXPECT_NE(finding(undecided, "net.fallback-unguarded"), nullptr) << ::testing::PrintToString(fired(undecided));
}

TEST(ScriptReviewUnknowns, TheVariableSetInsideTheProgramSrunRunsCounts) {
    ScriptReview r = review(kPyxis +
                                "srun --container-image=nvcr.io/nvidia/pytorch:25.01-py3 "
                                "--container-mounts=/opt/microsoft/ndv5-topo.xml:/opt/microsoft/ndv5-topo.xml "
                                "bash -c 'NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml python train.py'\n",
                            "azure-ndv5");
    EXPECT_EQ(finding(r, "topo.required"), nullptr) << ::testing::PrintToString(fired(r));
    EXPECT_EQ(finding(r, "topo.not-propagated"), nullptr) << ::testing::PrintToString(fired(r));
}

TEST(ScriptReview, StepsBehindWrappersAreJudged) {
    for (const std::string step :
         {"env NCCL_IB_DISABLE=1 srun ./a", "export NCCL_IB_DISABLE=1; timeout 2h srun ./a",
          "export NCCL_IB_DISABLE=1; nohup srun ./a", "export NCCL_IB_DISABLE=1; command srun ./a",
          "export NCCL_IB_DISABLE=1; stdbuf -oL srun ./a", "export NCCL_IB_DISABLE=1; sudo -E srun ./a",
          "export NCCL_IB_DISABLE=1; exec srun ./a", "export NCCL_IB_DISABLE=1; time srun ./a",
          "export NCCL_IB_DISABLE=1; /usr/bin/srun ./a",
          "sudo -E env NCCL_IB_DISABLE=1 timeout -s INT 10 /opt/slurm/bin/srun ./a"}) {
        ScriptReview r = review(kPyxis + step + "\n", "h100-cx7-ib");
        const Finding* f = finding(r, "net.ib-disabled");
        ASSERT_NE(f, nullptr) << step << ::testing::PrintToString(fired(r));
        EXPECT_EQ(f->action, Action::block) << step;
        EXPECT_EQ(r.report.decision, Decision::block) << step;
    }
    // env -u and env -i take it away again; sudo without -E leaves the environment unknown, said so.
    EXPECT_EQ(finding(review(kPyxis + "export NCCL_IB_DISABLE=1\nenv -u NCCL_IB_DISABLE srun ./a\n", "h100-cx7-ib"),
                      "net.ib-disabled"),
              nullptr);
    ScriptReview sudo = review(kPyxis + "export NCCL_IB_DISABLE=1\nsudo srun ./a\n", "h100-cx7-ib");
    EXPECT_EQ(finding(sudo, "net.ib-disabled"), nullptr);
    EXPECT_TRUE(has_unknown(sudo, "runs under sudo without -E")) << ::testing::PrintToString(fired(sudo));
}

TEST(ScriptReview, ASubshellsExportsAndExportNReachNoLaterStep) {
    for (const std::string lines :
         {"( export NCCL_IB_DISABLE=1 )\nsrun ./a\n", "export NCCL_IB_DISABLE=1\nexport -n NCCL_IB_DISABLE\nsrun ./a\n",
          "export NCCL_IB_DISABLE=1\nunset NCCL_IB_DISABLE\nsrun ./a\n",
          "export NCCL_IB_DISABLE=1\nunset -v NCCL_IB_DISABLE\nsrun ./a\n"}) {
        ScriptReview r = review(kPyxis + lines, "h100-cx7-ib");
        EXPECT_EQ(finding(r, "net.ib-disabled"), nullptr) << lines << ::testing::PrintToString(fired(r));
    }
    // The step inside the subshell sees what it sets.
    ScriptReview inside = review(kPyxis + "( export NCCL_IB_DISABLE=1; srun ./a )\nsrun ./b\n", "h100-cx7-ib");
    const Finding* f = finding(inside, "net.ib-disabled");
    ASSERT_NE(f, nullptr) << ::testing::PrintToString(fired(inside));
    EXPECT_EQ(evidence(*f, "step"), "srun on line 3");
    EXPECT_EQ(inside.report.findings.size(), 1U) << ::testing::PrintToString(fired(inside));
}

TEST(ScriptReview, ABlockingStepFarDownIsJudged) {
    std::string text = kPyxis;
    for (int i = 0; i < 1000; ++i) text += "srun ./step" + std::to_string(i) + "\n";
    ScriptReview r = review(text + "env NCCL_IB_DISABLE=1 srun ./last\n", "h100-cx7-ib");
    EXPECT_EQ(r.steps.size(), 1001U);
    const Finding* f = finding(r, "net.ib-disabled");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(evidence(*f, "step"), "srun on line 1003");
    EXPECT_EQ(r.report.decision, Decision::block);
}

// ---------------------------------------------------------------- --patched on hostile and unusual scripts

ScriptReview review_with_topology(const std::string& text, const std::string& host_path) {
    Profile profile = profile_named("azure-ndv5");
    profile.topology.host_path = host_path;
    auto result = review_script(text, "job.sbatch", profile, Mode::enforce);
    EXPECT_TRUE(result) << result.error().to_string();
    return result ? result.value() : ScriptReview{};
}

// The --container-mounts value of the first step of `script`, as the shell reads it.
std::string mounts_as_read(const std::string& script) {
    auto parsed = parse_batch_script(script, "patched.sbatch");
    if (!parsed || parsed->steps.empty()) return "<no step>";
    for (const auto& option : parsed->steps[0].options) {
        if (option.is("--container-mounts")) return option.value_known ? option.value : "<unknown>";
    }
    return "<none>";
}

TEST(ScriptPatch, InsertedValuesAreQuotedForTheShell) {
    const std::string job = kPyxis + "srun --container-image=img ./a\n";
    for (const std::string path : {"/opt/$(touch /tmp/pwned)/topo.xml", "/opt/`id`/topo.xml", "/opt/it's here/topo.xml",
                                   "/opt/a b;c&d|e>f/topo.xml", "/opt/${HOME}/*.xml"}) {
        ScriptReview r = review_with_topology(job, path);
        auto patched = patched_script(r);
        ASSERT_TRUE(patched) << patched.error().to_string();
        EXPECT_EQ(mounts_as_read(patched.value()), path + ":/opt/microsoft/ndv5-topo.xml:ro") << patched.value();
        EXPECT_EQ(std::count(patched->begin(), patched->end(), '\n'), 4) << patched.value();
    }
    ScriptReview r = review_with_topology(job, "/opt/$(reboot)/topo.xml");
    EXPECT_NE(
        patched_script(r)->find("srun '--container-mounts=/opt/$(reboot)/topo.xml:/opt/microsoft/ndv5-topo.xml:ro' "
                                "--container-env=NCCL_TOPO_FILE --container-image=img ./a\n"),
        std::string::npos)
        << patched_script(r).value();
}

TEST(ScriptPatch, AValueNoLineCanCarryIsRefused) {
    const std::string job = kPyxis + "srun --container-image=img ./a\n";
    const std::vector<std::string> paths = {"/opt/x\nreboot\n/topo.xml", std::string("/opt/x\0y", 8), "/opt/x\r/t.xml",
                                            "/opt/a,b/topo.xml", "/opt/a:b/topo.xml"};
    for (const auto& path : paths) {
        ScriptReview r = review_with_topology(job, path);
        auto patched = patched_script(r);
        ASSERT_FALSE(patched) << patched.value();
        EXPECT_NE(patched.error().to_string().find("job.sbatch:3: --patched cannot write the fix for the mount"),
                  std::string::npos)
            << patched.error().to_string();
    }
}

TEST(ScriptPatch, CrLfScriptsKeepTheirLineBreaks) {
    std::string job = "#!/bin/bash\r\n#SBATCH --nodes=2 --gpus-per-node=8\r\nsrun --container-image=img ./a\r\n";
    ScriptReview r = review(job, "azure-ndv5");
    EXPECT_TRUE(has_unknown(r, "sbatch refuses a script with them"));
    auto patched = patched_script(r);
    ASSERT_TRUE(patched) << patched.error().to_string();
    EXPECT_EQ(patched.value(),
              "#!/bin/bash\r\n#SBATCH --nodes=2 --gpus-per-node=8\r\n"
              "export NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\r\n"
              "srun --container-mounts=/opt/microsoft/ndv5-topo.xml:/opt/microsoft/ndv5-topo.xml:ro "
              "--container-env=NCCL_TOPO_FILE --container-image=img ./a\r\n");
}

TEST(ScriptPatch, ALastLineWithoutALineBreakKeepsNone) {
    ScriptReview r = review(kPyxis + "srun --container-image=img ./a", "azure-ndv5");
    auto patched = patched_script(r);
    ASSERT_TRUE(patched) << patched.error().to_string();
    EXPECT_TRUE(patched->ends_with("--container-image=img ./a")) << patched.value();
}

TEST(ScriptPatch, EveryStepOnALineIsPatched) {
    for (const std::string separator : {" && ", " ; ", " || ", " | "}) {
        std::string job = kPyxis + "srun --container-image=img ./a" + separator + "srun --container-image=img ./b\n";
        ScriptReview r = review(job, "azure-ndv5");
        ASSERT_EQ(r.steps.size(), 2U) << separator;
        auto patched = patched_script(r);
        ASSERT_TRUE(patched) << patched.error().to_string();
        const std::string fixed =
            "srun --container-mounts=/opt/microsoft/ndv5-topo.xml:/opt/microsoft/ndv5-topo.xml:ro "
            "--container-env=NCCL_TOPO_FILE --container-image=img ./";
        EXPECT_NE(patched->find(fixed + "a" + separator + fixed + "b\n"), std::string::npos) << patched.value();
        // Patched once is patched for good.
        ScriptReview again = review(patched.value(), "azure-ndv5");
        EXPECT_EQ(finding(again, "topo.not-propagated"), nullptr)
            << separator << ::testing::PrintToString(fired(again));
        EXPECT_EQ(patched_script(again).value(), patched.value()) << separator;
    }
}

TEST(ScriptReview, BindingByIdIsFoundFromSrunCpuBind) {
    ScriptReview r = review(kPyxis + "srun --cpu-bind=map_cpu:0,1,2,3 ./a\n");
    const Finding* f = finding(r, "cpu.bind-by-id");
    ASSERT_NE(f, nullptr) << ::testing::PrintToString(fired(r));
    EXPECT_EQ(evidence(*f, "--cpu-bind"), "map_cpu:0,1,2,3");
    EXPECT_EQ(evidence(*f, "requested_in"), "line 3: --cpu-bind=map_cpu:0,1,2,3");
    // A mask list the user wrote is by id too (in a task's environment Slurm's own masks look the same).
    EXPECT_NE(finding(review(kPyxis + "srun --cpu-bind mask_cpu:0x3,0xc ./a\n"), "cpu.bind-by-id"), nullptr);
    for (const char* topology : {"ldoms", "sockets", "cores", "map_ldom:0,1", "none"}) {
        EXPECT_EQ(finding(review(kPyxis + "srun --cpu-bind=" + topology + " ./a\n"), "cpu.bind-by-id"), nullptr)
            << topology;
    }
}

TEST(ScriptReview, ComputedValuesAreUnknownNeverGuessed) {
    ScriptReview r = review(kPyxis + "export NCCL_IB_QPS_PER_CONNECTION=$(nproc)\nsrun ./a\n", "b300-cx8");
    EXPECT_EQ(finding(r, "conf.lint"), nullptr) << ::testing::PrintToString(fired(r));
    auto mentions = [&](const std::string& text) {
        return std::any_of(r.report.unknowns.begin(), r.report.unknowns.end(),
                           [&](const Unknown& u) { return u.reason.find(text) != std::string::npos; });
    };
    EXPECT_TRUE(mentions("NCCL_IB_QPS_PER_CONNECTION (export on line 3) is not known before the job runs: $(nproc)"));
}

// ---------------------------------------------------------------- the real scripts

bool has_unknown(const ScriptReview& r, const std::string& rule, const std::string& text) {
    return std::any_of(r.report.unknowns.begin(), r.report.unknowns.end(),
                       [&](const Unknown& u) { return u.rule == rule && u.reason.find(text) != std::string::npos; });
}

TEST(ScriptReviewFixtures, AwsNcclTestsOnAnH100IbCluster) {
    // An EFA job: its NCCL settings are sound, and whether sockets could take
    // over depends on the net plugin in the image, which a script does not show.
    ScriptReview r = review(fixture_text("slurm/awsome-nccl-tests-container.sbatch"), "h100-cx7-ib");
    ASSERT_EQ(r.steps.size(), 2U);
    // Line 56, `mpirun -N 1 bash -c 'echo $(hostname): ...'`: one rank per node, printing, no NCCL.
    EXPECT_EQ(r.steps[0].launch.label, "mpirun on line 56");
    EXPECT_EQ(r.steps[0].launch.context.job.tasks.value(), 2);
    EXPECT_FALSE(r.steps[0].launch.utility.empty());
    EXPECT_EQ(r.steps[1].launch.context.runtime, Runtime::pyxis);
    EXPECT_EQ(r.steps[1].launch.context.job.tasks.value(), 16);
    EXPECT_EQ(r.steps[1].launch.context.job.total_gpus.value(), 16);  // --exclusive x profile's 8 GPUs
    // NCCL_DEBUG=INFO (line 36) is an advisory only.
    EXPECT_EQ(::testing::PrintToString(fired(r)), "{ \"nccl.debug-verbose:warn\" }");
    EXPECT_EQ(r.report.decision, Decision::allow);
    EXPECT_TRUE(has_unknown(r, "net.fallback-unguarded", "/fsx/nccl-tests.sqsh"));
    EXPECT_TRUE(has_unknown(r, "review", "NCCL_TUNER_PLUGIN (export on line 48) is not known before the job runs"));
}

TEST(ScriptReviewFixtures, MegatronTurnsNvlsOffOnAnNvswitchNode) {
    ScriptReview r =
        review(fixture_text("slurm/awsome-megatron-megatron-lm-slurm-llama2-pretrain-llama2.sbatch"), "h100-cx7-ib");
    EXPECT_EQ(::testing::PrintToString(fired(r)), "{ \"nccl.nvls-disabled:warn\" }");
    // IMAGE and FSX_MOUNT default to $(pwd)/...: the container view says so instead of guessing.
    EXPECT_TRUE(has_unknown(r, "review", "srun on line 143: --container-image $IMAGE is computed at run time"));
}

TEST(ScriptReviewFixtures, DefaultProfileFindsNothingToBlockInAnyFixture) {
    for (const char* name : {"slurm/awsome-nccl-tests-container.sbatch",
                             "slurm/awsome-topology-aware-nccl-tests-nccl-tests-container.sbatch",
                             "slurm/awsome-megatron-megatron-lm-slurm-llama2-pretrain-llama2.sbatch",
                             "slurm/awsome-pytorch-ddp-slurm-3.container-train.sbatch"}) {
        ScriptReview r = review(fixture_text(name));
        EXPECT_NE(r.report.decision, Decision::block) << name << ::testing::PrintToString(fired(r));
        // The nccl-tests script exports NCCL_DEBUG=INFO: an advisory warning, nothing else.
        const bool debug = std::string(name) == "slurm/awsome-nccl-tests-container.sbatch";
        EXPECT_EQ(::testing::PrintToString(fired(r)), debug ? "{ \"nccl.debug-verbose:warn\" }" : "{}") << name;
    }
}

}  // namespace
}  // namespace launchguard::slurm_script
