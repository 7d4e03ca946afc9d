// parse_batch_script(): the shell a batch script is written in, read without
// running it — directives, exports, arrays, defaults, steps, bash -c — and
// hostile input (unbalanced quotes, endless heredocs, random bytes).
#include "slurm_script/batch_script.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "support/azure_fixtures.h"

namespace launchguard::slurm_script {
namespace {

using testing::fixture_text;

BatchScript parse(const std::string& text) {
    auto script = parse_batch_script(text, "job.sbatch");
    EXPECT_TRUE(script) << script.error().to_string();
    return script ? script.value() : BatchScript{};
}

std::string value_of(const VariableMap& env, const std::string& name) {
    auto it = env.find(name);
    if (it == env.end()) return "<absent>";
    return it->second.value ? *it->second.value : "<unknown: " + it->second.why_unknown + ">";
}

const Option* option(const std::vector<Option>& options, const std::string& name) {
    for (const auto& o : options) {
        if (o.name == name) return &o;
    }
    return nullptr;
}

TEST(BatchScript, ReadsDirectivesUntilTheFirstCommand) {
    BatchScript script = parse(
        "#!/bin/bash\n"
        "#SBATCH --nodes=64 # comment\n"
        "#SBATCH -N 2\n"
        "#SBATCH --gpus-per-node 8\n"
        "###SBATCH --exclusive\n"
        "echo hi\n"
        "#SBATCH --ntasks=9\n");
    ASSERT_EQ(script.directives.size(), 3U);
    EXPECT_EQ(script.directives[0].name, "--nodes");
    EXPECT_EQ(script.directives[0].value, "64");
    EXPECT_EQ(script.directives[1].name, "-N");
    EXPECT_EQ(script.directives[1].value, "2");
    EXPECT_EQ(script.directives[2].value, "8");
    EXPECT_EQ(script.directives[2].line, 4);
    EXPECT_EQ(script.last_directive_line, 4);
}

TEST(BatchScript, FollowsExportsPrefixesExportFlagAndBashC) {
    BatchScript script = parse(
        "#!/bin/bash\n"
        "export NCCL_IB_HCA=mlx5_0 NCCL_DEBUG=\"INFO\"\n"
        "NCCL_NET=IB\n"
        "export NCCL_NET\n"
        "LOCAL=1\n"
        "export NCCL_TUNER=/opt/$(uname -m)/x.so\n"
        "NCCL_IB_QPS_PER_CONNECTION=2 srun --export=ALL,NCCL_BUFFSIZE=4194304 \\\n"
        "    --ntasks-per-node 8 bash -c 'export NCCL_P2P_DISABLE=1; ./train'\n");
    ASSERT_EQ(script.steps.size(), 1U);
    const SrunStep& step = script.steps[0];
    EXPECT_EQ(step.line, 7);
    EXPECT_EQ(value_of(step.environment, "NCCL_IB_HCA"), "mlx5_0");
    EXPECT_EQ(value_of(step.environment, "NCCL_DEBUG"), "INFO");
    EXPECT_EQ(value_of(step.environment, "NCCL_NET"), "IB");
    EXPECT_EQ(value_of(step.environment, "LOCAL"), "<absent>");  // never exported
    EXPECT_EQ(value_of(step.environment, "NCCL_TUNER"), "<unknown: $(uname -m)>");
    EXPECT_EQ(value_of(step.environment, "NCCL_IB_QPS_PER_CONNECTION"), "2");
    EXPECT_EQ(value_of(step.environment, "NCCL_BUFFSIZE"), "4194304");
    EXPECT_EQ(value_of(step.environment, "NCCL_P2P_DISABLE"), "1");
    ASSERT_NE(option(step.options, "--ntasks-per-node"), nullptr);
    EXPECT_EQ(option(step.options, "--ntasks-per-node")->value, "8");
    EXPECT_EQ(step.program, "bash");
}

TEST(BatchScript, ExportNoneDropsTheScriptsEnvironment) {
    BatchScript script = parse("export NCCL_IB_HCA=mlx5_0\nsrun --export=NONE ./a\nsrun --export=NCCL_IB_HCA ./b\n");
    ASSERT_EQ(script.steps.size(), 2U);
    EXPECT_EQ(value_of(script.steps[0].environment, "NCCL_IB_HCA"), "<absent>");
    EXPECT_EQ(value_of(script.steps[1].environment, "NCCL_IB_HCA"), "mlx5_0");
}

TEST(BatchScript, ExpandsArraysAndDefaultsIntoSrunOptions) {
    BatchScript script = parse(
        ": \"${IMAGE:=/fsx/nccl.sqsh}\"\n"
        "declare -a ARGS=(\n"
        "    --container-image $IMAGE   # the image\n"
        "    --container-mounts /opt/microsoft:/opt/microsoft:ro\n"
        ")\n"
        "ARGS+=( --no-container-mount-home )\n"
        "srun \"${ARGS[@]}\" --cpu-bind=map_cpu:0,1 all_reduce_perf -b 8\n");
    ASSERT_EQ(script.steps.size(), 1U);
    const auto& options = script.steps[0].options;
    ASSERT_NE(option(options, "--container-image"), nullptr);
    EXPECT_EQ(option(options, "--container-image")->value, "/fsx/nccl.sqsh");
    EXPECT_EQ(option(options, "--container-mounts")->value, "/opt/microsoft:/opt/microsoft:ro");
    EXPECT_NE(option(options, "--no-container-mount-home"), nullptr);
    EXPECT_EQ(option(options, "--cpu-bind")->value, "map_cpu:0,1");
    EXPECT_EQ(script.steps[0].program, "all_reduce_perf");
}

TEST(BatchScript, AssignmentsUnderAConditionAreUnknown) {
    BatchScript script = parse(
        "if [[ \"$X\" == true ]]; then\n"
        "    export NCCL_DEBUG=INFO\n"
        "fi\n"
        "export NCCL_NET=IB\n"
        "srun ./a\n");
    ASSERT_EQ(script.steps.size(), 1U);
    EXPECT_EQ(value_of(script.steps[0].environment, "NCCL_DEBUG"),
              "<unknown: set inside the if on line 1, so only when a condition the script does not decide holds>");
    EXPECT_EQ(value_of(script.steps[0].environment, "NCCL_NET"), "IB");
    EXPECT_FALSE(script.steps[0].conditional);
}

TEST(BatchScript, AConditionTheScriptDecidesDecidesTheBranch) {
    const std::string body =
        "if [[ $SLURM_JOB_NUM_NODES -gt 1 ]]; then\n"
        "    export NCCL_IB_DISABLE=0\n"
        "else\n"
        "    export NCCL_IB_DISABLE=1\n"
        "fi\n"
        "HCA=mlx5\n"
        "[ -n \"$HCA\" ] && export NCCL_IB_HCA=$HCA\n"
        "srun ./a\n";
    BatchScript two = parse("#!/bin/bash\n#SBATCH --nodes=2\n" + body);
    ASSERT_EQ(two.steps.size(), 1U);
    EXPECT_EQ(value_of(two.steps[0].environment, "NCCL_IB_DISABLE"), "0");
    EXPECT_EQ(value_of(two.steps[0].environment, "NCCL_IB_HCA"), "mlx5");
    BatchScript one = parse("#!/bin/bash\n#SBATCH -N 1\n" + body);
    EXPECT_EQ(value_of(one.steps[0].environment, "NCCL_IB_DISABLE"), "1");
    // A node range is no one number: the branch is not decided, and the line is named.
    BatchScript range = parse("#!/bin/bash\n#SBATCH --nodes=1-4\n" + body);
    EXPECT_EQ(value_of(range.steps[0].environment, "NCCL_IB_DISABLE"),
              "<unknown: set inside the if on line 3, so only when a condition the script does not decide holds>");
    // The variable stays in the step: unknown, never dropped.
    EXPECT_EQ(range.steps[0].environment.count("NCCL_IB_DISABLE"), 1U);
}

TEST(BatchScript, SourceModuleAndEvalMaySetAnyVariable) {
    BatchScript script = parse(
        "#!/bin/bash\n"
        "srun ./before\n"
        "source /etc/profile.d/nccl.sh\n"
        "module load nccl/2.21\n"
        "srun ./after\n");
    ASSERT_EQ(script.steps.size(), 2U);
    EXPECT_TRUE(script.steps[0].open_sources.empty());
    ASSERT_EQ(script.steps[1].open_sources.size(), 2U);
    EXPECT_EQ(script.steps[1].open_sources[0], "line 3: source /etc/profile.d/nccl.sh may set any variable");
    EXPECT_EQ(script.steps[1].open_sources[1], "line 4: module load nccl/2.21 may set any variable");
    EXPECT_EQ(script.open_sources.size(), 2U);
}

TEST(BatchScript, TheProgramSrunRunsIsReadLikeAContainersCommand) {
    BatchScript script = parse(
        "#!/bin/bash\n"
        "srun --container-image=img bash -c 'NCCL_TOPO_FILE=/opt/topo.xml python train.py'\n"
        "srun env NCCL_DEBUG=INFO NCCL_ALGO=$(pick) python train.py\n"
        "srun bash -lc 'source /opt/env.sh; export NCCL_NET=IB; exec python train.py'\n");
    ASSERT_EQ(script.steps.size(), 3U);
    EXPECT_EQ(value_of(script.steps[0].environment, "NCCL_TOPO_FILE"), "/opt/topo.xml");
    EXPECT_EQ(value_of(script.steps[1].environment, "NCCL_DEBUG"), "INFO");
    EXPECT_EQ(value_of(script.steps[1].environment, "NCCL_ALGO"), "<unknown: $(pick)>");
    EXPECT_EQ(value_of(script.steps[2].environment, "NCCL_NET"), "IB");
    ASSERT_EQ(script.steps[2].open_sources.size(), 1U);
    EXPECT_EQ(script.steps[2].open_sources[0],
              "bash -c in the srun on line 4, line 4: source /opt/env.sh may set any variable");
}

TEST(BatchScript, SkipsHeredocBodies) {
    BatchScript script = parse(
        "cat > x.py <<'EOF'\n"
        "srun --nodes=999 ./not-a-step\n"
        "export NCCL_IB_HCA=nothing\n"
        "EOF\n"
        "srun ./real\n");
    ASSERT_EQ(script.steps.size(), 1U);
    EXPECT_EQ(script.steps[0].line, 5);
    EXPECT_EQ(value_of(script.exported, "NCCL_IB_HCA"), "<absent>");
}

TEST(BatchScript, ReadsTheRealFixtures) {
    BatchScript nccl_tests = parse(fixture_text("slurm/awsome-nccl-tests-container.sbatch"));
    // mpirun on line 56 prints each node's name: a step of its own, running only utilities.
    ASSERT_EQ(nccl_tests.steps.size(), 2U);
    EXPECT_EQ(nccl_tests.steps[0].line, 56);
    EXPECT_FALSE(nccl_tests.steps[0].srun);
    EXPECT_EQ(nccl_tests.steps[0].mpi->ranks_per_node, 1);
    EXPECT_FALSE(nccl_tests.steps[0].utility.empty());
    EXPECT_EQ(nccl_tests.steps[1].line, 59);
    EXPECT_EQ(option(nccl_tests.steps[1].options, "--container-image")->value, "/fsx/nccl-tests.sqsh");
    EXPECT_EQ(value_of(nccl_tests.steps[1].environment, "NCCL_BUFFSIZE"), "8388608");
    EXPECT_EQ(value_of(nccl_tests.steps[1].environment, "FI_PROVIDER"), "efa");
    EXPECT_TRUE(nccl_tests.steps[1].utility.empty());

    BatchScript topology_aware =
        parse(fixture_text("slurm/awsome-topology-aware-nccl-tests-nccl-tests-container.sbatch"));
    ASSERT_EQ(topology_aware.steps.size(), 2U);
    EXPECT_FALSE(topology_aware.steps[0].utility.empty());  // mpirun -N 1 bash -c 'HOSTNAME=$(hostname) ...'
    // ENABLE_NCCL_DEBUG=${4:-false}: the default counts as the value, so the if on line 94 is decided.
    EXPECT_EQ(value_of(topology_aware.steps[1].environment, "NCCL_DEBUG"), "<absent>");
    EXPECT_EQ(value_of(topology_aware.steps[1].environment, "NCCL_TESTS_SPLIT_MASK"), "0x0");

    BatchScript megatron = parse(fixture_text("slurm/awsome-megatron-megatron-lm-slurm-llama2-pretrain-llama2.sbatch"));
    ASSERT_EQ(megatron.steps.size(), 1U);
    EXPECT_EQ(value_of(megatron.steps[0].environment, "NCCL_NVLS_ENABLE"), "0");
    EXPECT_FALSE(option(megatron.steps[0].options, "--container-image")->value_known);  // $(pwd)
    EXPECT_EQ(megatron.steps[0].program, "python");

    BatchScript ddp = parse(fixture_text("slurm/awsome-pytorch-ddp-slurm-3.container-train.sbatch"));
    ASSERT_EQ(ddp.steps.size(), 1U);
    EXPECT_EQ(value_of(ddp.steps[0].environment, "NVIDIA_VISIBLE_DEVICES"), "void");
}

// ---------------------------------------------------------------- hostile input

TEST(BatchScriptHostile, UnbalancedQuotesEndTheScriptWithANote) {
    BatchScript script = parse("#!/bin/bash\nexport A='open\nsrun ./never\n");
    EXPECT_TRUE(script.steps.empty());
    ASSERT_FALSE(script.notes.empty());
    EXPECT_NE(script.notes[0].find("line 2: unterminated single quote"), std::string::npos) << script.notes[0];

    BatchScript dq = parse("srun \"$(echo \"x)\" ./a\n");
    EXPECT_FALSE(dq.notes.empty());
}

TEST(BatchScriptHostile, UnclosedHeredocAndContinuationAtTheEnd) {
    BatchScript heredoc = parse("cat <<EOF\nsrun ./a\n");
    EXPECT_TRUE(heredoc.steps.empty());
    EXPECT_FALSE(heredoc.notes.empty());
    BatchScript continuation = parse("srun --nodes=2 \\");
    ASSERT_EQ(continuation.steps.size(), 1U);
    BatchScript array = parse("A=( --x\nsrun ./a\n");
    EXPECT_FALSE(array.notes.empty());
}

TEST(BatchScriptHostile, RefusesTooLargeAndBinaryInput) {
    std::string huge(kMaxScriptBytes + 1, '#');
    auto too_large = parse_batch_script(huge, "big.sbatch");
    ASSERT_FALSE(too_large);
    EXPECT_NE(too_large.error().to_string().find("big.sbatch"), std::string::npos);
    auto binary = parse_batch_script(std::string("#!/bin/sh\necho\n\0x", 18), "bin.sbatch");
    ASSERT_FALSE(binary);
    EXPECT_EQ(binary.error().line, 3);
}

TEST(BatchScriptHostile, DeepNestingAndRandomBytesNeverCrashOrHang) {
    std::string nested = "srun " + std::string(20000, '(') + "$(" + std::string(20000, '{') + "\n";
    EXPECT_TRUE(parse_batch_script(nested, "n.sbatch"));
    std::string defaults = "export A=";
    for (int i = 0; i < 50000; ++i) defaults += "${A:-";
    EXPECT_TRUE(parse_batch_script(defaults + "\nsrun ./a\n", "d.sbatch"));
    std::string quotes = "export A=";
    for (int i = 0; i < 50000; ++i) quotes += "\"$(";
    auto deep = parse_batch_script(quotes + "\n", "q.sbatch");
    ASSERT_TRUE(deep);
    EXPECT_FALSE(deep.value().notes.empty());
    std::string bash_c = "srun bash -c 'bash -c \"bash -c \\\"export A=1\\\"\"'\n";
    EXPECT_TRUE(parse_batch_script(bash_c, "c.sbatch"));

    // Mutations of a real script: every byte class the lexer branches on.
    const std::string seed = fixture_text("slurm/awsome-topology-aware-nccl-tests-nccl-tests-container.sbatch");
    const std::string alphabet = "'\"`$(){}[]\\\n#;&|<>=-: \tA0@*";
    std::mt19937 random(12345);
    for (int round = 0; round < 300; ++round) {
        std::string text = seed;
        for (int edit = 0; edit < 20; ++edit) {
            std::size_t at = random() % text.size();
            text[at] = alphabet[random() % alphabet.size()];
        }
        if (round % 3 == 0) text.resize(random() % text.size());
        auto script = parse_batch_script(text, "fuzz.sbatch");
        EXPECT_TRUE(script);
    }
}

TEST(BatchScriptHostile, EveryStepUpToTheBoundIsReadAndMoreAreRefused) {
    std::string text = "#!/bin/bash\n";
    for (std::size_t i = 0; i < kMaxSteps; ++i) text += "srun ./a\n";
    BatchScript script = parse(text);
    ASSERT_EQ(script.steps.size(), kMaxSteps);
    EXPECT_EQ(script.steps.back().line, static_cast<int>(kMaxSteps) + 1);

    // One more is refused, naming the line of the first step past the bound.
    auto refused = parse_batch_script(text + "srun ./b\n", "job.sbatch");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().to_string(),
              "job.sbatch:4098: the script runs more than 4096 srun steps; launchguard judges up to 4096 and refuses "
              "a script with more rather than judge part of it");
}

TEST(BatchScriptHostile, StepEnvironmentsAreBoundedTogether) {
    // One 64 KiB variable copied into every step: past 64 MiB together the script is refused.
    std::string text = "#!/bin/bash\nexport A=xxxxxxxxxxxxxxxx\n";
    for (int i = 0; i < 12; ++i) text += "A=$A$A\n";
    for (int i = 0; i < 1100; ++i) text += "srun ./a\n";
    auto refused = parse_batch_script(text, "job.sbatch");
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().to_string().find("srun steps together are larger than 67108864 bytes"), std::string::npos)
        << refused.error().to_string();
}

TEST(BatchScriptHostile, ManyVariablesAreFollowedUpToTheLimit) {
    std::string text = "#!/bin/bash\n";
    for (int i = 0; i < 50000; ++i) text += "export A" + std::to_string(i) + "=1\n";
    text += "srun ./a\nsrun ./b\n";
    BatchScript script = parse(text);
    ASSERT_EQ(script.steps.size(), 2U);
    EXPECT_EQ(script.steps[0].environment.size(), 1024U);
    ASSERT_FALSE(script.notes.empty());
    EXPECT_EQ(script.notes[0],
              "the script sets more than 1024 variables; the later ones (first: A1024) are not followed");
}

TEST(BatchScriptHostile, ValuesThatDoubleStopAtTheLimit) {
    // 16 bytes doubled 12 times is 64 KiB, the limit; the 13th doubling is unknown, not built.
    std::string text = "#!/bin/bash\nexport A=xxxxxxxxxxxxxxxx\n";
    for (int i = 0; i < 13; ++i) text += "A=$A$A\n";
    BatchScript script = parse(text + "srun ./a\n");
    ASSERT_EQ(script.steps.size(), 1U);
    EXPECT_EQ(value_of(script.steps[0].environment, "A"), "<unknown: $A (longer than 65536 bytes)>");

    std::string endless = "#!/bin/bash\nexport A=xxxxxxxxxxxxxxxx\n";
    for (int i = 0; i < 5000; ++i) endless += "A=$A$A$A$A\nA+=$A\n";
    EXPECT_EQ(parse(endless + "srun ./a\n").steps.size(), 1U);
}

// ---------------------------------------------------------------- wrappers around srun

TEST(BatchScriptWrappers, EachWrapperRunsAStep) {
    const std::vector<std::string> commands = {
        "srun -N 2 ./a",
        "env NCCL_IB_DISABLE=1 srun -N 2 ./a",
        "timeout 10m srun -N 2 ./a",
        "timeout -s INT --kill-after=30 -k 5 --foreground 2h srun -N 2 ./a",
        "nohup srun -N 2 ./a",
        "command srun -N 2 ./a",
        "command -p srun -N 2 ./a",
        "stdbuf -oL srun -N 2 ./a",
        "stdbuf -o L -e 0 srun -N 2 ./a",
        "sudo -E srun -N 2 ./a",
        "sudo -u alice -E srun -N 2 ./a",
        "sudo -Eu alice srun -N 2 ./a",
        "exec srun -N 2 ./a",
        "exec -a name srun -N 2 ./a",
        "time srun -N 2 ./a",
        "time -p srun -N 2 ./a",
        "/usr/bin/time -f %e -o t.log srun -N 2 ./a",
        "nice -n 5 srun -N 2 ./a",
        "/usr/bin/srun -N 2 ./a",
        "/opt/slurm/bin/srun -N 2 ./a",
        "\"srun\" -N 2 ./a",
        "/usr/bin/env X=1 /usr/bin/timeout 5 /usr/bin/srun -N 2 ./a",
        "sudo -E env X=1 nohup stdbuf -oL timeout 5 srun -N 2 ./a",
    };
    for (const auto& command : commands) {
        BatchScript script = parse("#!/bin/bash\n" + command + "\n");
        ASSERT_EQ(script.steps.size(), 1U) << command;
        EXPECT_EQ(script.steps[0].line, 2) << command;
        const Option* nodes = option(script.steps[0].options, "-N");
        ASSERT_NE(nodes, nullptr) << command;
        EXPECT_EQ(nodes->value, "2") << command;
        EXPECT_EQ(script.steps[0].program, "./a") << command;
    }
}

TEST(BatchScriptWrappers, TimeBeforeABlockIsTheKeyword) {
    BatchScript script = parse("#!/bin/bash\ntime { export A=1; }\nexport B=2\nsrun ./a\n");
    ASSERT_EQ(script.steps.size(), 1U);
    EXPECT_EQ(value_of(script.steps[0].environment, "B"), "2");
    BatchScript inside = parse("#!/bin/bash\nif true; then time { srun ./a; }; export C=3; fi\nsrun ./b\n");
    ASSERT_EQ(inside.steps.size(), 2U);
    EXPECT_TRUE(inside.steps[0].conditional);
    EXPECT_EQ(value_of(inside.steps[1].environment, "C").substr(0, 9), "<unknown:");
}

TEST(BatchScriptWrappers, CommandsThatRunNoSrunAreNoSteps) {
    for (const std::string command : {"command -v srun", "command -V srun", "env", "env -S 'srun ./a'", "echo srun",
                                      "timeout 10", "which srun", "sudo", "my-srun ./a"}) {
        EXPECT_TRUE(parse("#!/bin/bash\n" + command + "\n").steps.empty()) << command;
    }
}

TEST(BatchScriptWrappers, EnvSetsUnsetsAndClearsTheStepsEnvironment) {
    BatchScript script = parse(
        "#!/bin/bash\n"
        "export KEEP=1 DROP=2\n"
        "env NCCL_IB_DISABLE=1 srun ./a\n"
        "env -u DROP --unset=KEEP X=\"a b\" srun ./b\n"
        "env -i PATH=/bin srun ./c\n"
        "Y=1 env - srun ./d\n"
        "exec -c srun ./e\n"
        "env A=$(date) srun ./f\n");
    ASSERT_EQ(script.steps.size(), 6U);
    EXPECT_EQ(value_of(script.steps[0].environment, "NCCL_IB_DISABLE"), "1");
    EXPECT_EQ(value_of(script.steps[0].environment, "KEEP"), "1");
    EXPECT_EQ(script.steps[0].environment.at("NCCL_IB_DISABLE").origin, "env on line 3");
    EXPECT_EQ(value_of(script.steps[1].environment, "DROP"), "<absent>");
    EXPECT_EQ(value_of(script.steps[1].environment, "KEEP"), "<absent>");
    EXPECT_EQ(value_of(script.steps[1].environment, "X"), "a b");
    EXPECT_EQ(script.steps[2].environment.size(), 1U);
    EXPECT_EQ(value_of(script.steps[2].environment, "PATH"), "/bin");
    EXPECT_TRUE(script.steps[3].environment.empty());
    EXPECT_TRUE(script.steps[4].environment.empty());
    EXPECT_EQ(value_of(script.steps[5].environment, "A"), "<unknown: $(date)>");
    for (const auto& step : script.steps) EXPECT_TRUE(step.environment_complete) << step.line;
    // Exports before the wrappers still reach later steps: env changes only its own command.
    BatchScript after = parse("#!/bin/bash\nexport KEEP=1\nenv -i srun ./a\nsrun ./b\n");
    ASSERT_EQ(after.steps.size(), 2U);
    EXPECT_EQ(value_of(after.steps[1].environment, "KEEP"), "1");
}

TEST(BatchScriptWrappers, SudoKeepsTheEnvironmentOnlyWithE) {
    BatchScript script = parse(
        "#!/bin/bash\n"
        "export NCCL_IB_DISABLE=1\n"
        "sudo -E srun ./a\n"
        "sudo --preserve-env srun ./b\n"
        "sudo srun ./c\n"
        "sudo -u alice X=1 srun ./d\n");
    ASSERT_EQ(script.steps.size(), 4U);
    EXPECT_TRUE(script.steps[0].environment_complete);
    EXPECT_EQ(value_of(script.steps[0].environment, "NCCL_IB_DISABLE"), "1");
    EXPECT_TRUE(script.steps[1].environment_complete);
    EXPECT_FALSE(script.steps[2].environment_complete);
    EXPECT_EQ(script.steps[2].environment_why_unknown,
              "the srun on line 5 runs under sudo without -E (the environment is what the sudoers policy keeps)");
    EXPECT_FALSE(script.steps[3].environment_complete);
    EXPECT_EQ(value_of(script.steps[3].environment, "X"), "1");
}

// ---------------------------------------------------------------- subshells, export -n, unset

TEST(BatchScriptScopes, WhatASubshellSetsStaysInIt) {
    BatchScript script = parse(
        "#!/bin/bash\n"
        "export OUTER=1\n"
        "( export NCCL_IB_DISABLE=1; export OUTER=2; srun ./inside )\n"
        "srun ./after\n"
        "(\n"
        "  unset OUTER\n"
        "  ( export DEEP=1 )\n"
        "  srun ./nested\n"
        ")\n"
        "(set -a; LATER=1) && srun ./c\n"
        "case $1 in a) export CASE=1;; (b) export CASE=2;; esac\n"
        "( diff <(cat a) >(cat) ; export PS=1 ) ; srun ./d\n");
    ASSERT_EQ(script.steps.size(), 5U);
    EXPECT_EQ(value_of(script.steps[0].environment, "NCCL_IB_DISABLE"), "1");
    EXPECT_EQ(value_of(script.steps[0].environment, "OUTER"), "2");
    EXPECT_EQ(value_of(script.steps[1].environment, "NCCL_IB_DISABLE"), "<absent>");
    EXPECT_EQ(value_of(script.steps[1].environment, "OUTER"), "1");
    EXPECT_EQ(value_of(script.steps[2].environment, "OUTER"), "<absent>");
    EXPECT_EQ(value_of(script.steps[2].environment, "DEEP"), "<absent>");
    EXPECT_EQ(value_of(script.steps[3].environment, "LATER"), "<absent>");
    EXPECT_EQ(value_of(script.steps[4].environment, "OUTER"), "1");
    EXPECT_EQ(value_of(script.steps[4].environment, "PS"), "<absent>");
    // A case pattern's ')' closes no subshell: CASE is set (under a condition), not dropped.
    EXPECT_NE(value_of(script.steps[4].environment, "CASE"), "<absent>");
    EXPECT_EQ(script.exported.count("NCCL_IB_DISABLE"), 0U);
}

TEST(BatchScriptScopes, ExportNAndUnsetTakeAVariableFromLaterSteps) {
    BatchScript script = parse(
        "#!/bin/bash\n"
        "export A=1 B=2 C=3 D=4 E=5\n"
        "export -n A\n"
        "declare +x B\n"
        "unset C\n"
        "unset -v D\n"
        "unset -f E\n"
        "export -n F=6\n"
        "srun ./a\n"
        "srun --export=A,F ./b\n");
    ASSERT_EQ(script.steps.size(), 2U);
    const auto& env = script.steps[0].environment;
    EXPECT_EQ(value_of(env, "A"), "<absent>");
    EXPECT_EQ(value_of(env, "B"), "<absent>");
    EXPECT_EQ(value_of(env, "C"), "<absent>");
    EXPECT_EQ(value_of(env, "D"), "<absent>");
    EXPECT_EQ(value_of(env, "E"), "5");
    EXPECT_EQ(value_of(env, "F"), "<absent>");
    // Still set in the script: --export=NAME passes them by name.
    EXPECT_EQ(value_of(script.steps[1].environment, "A"), "1");
    EXPECT_EQ(value_of(script.steps[1].environment, "F"), "6");
}

TEST(BatchScriptHostile, DeepAndEndlessSubshellsStayBounded) {
    std::string deep = "#!/bin/bash\nexport A=0\n" + std::string(100000, '(') + "export A=1\n" +
                       std::string(100000, ')') + "\nsrun ./a\n";
    BatchScript script = parse(deep);
    ASSERT_EQ(script.steps.size(), 1U);
    EXPECT_EQ(value_of(script.steps[0].environment, "A"), "0");
    std::string many = "#!/bin/bash\n";
    for (int i = 0; i < 1000; ++i) many += "export V" + std::to_string(i) + "=1\n";
    for (int i = 0; i < 20000; ++i) many += "( export V1=2 )\n";
    EXPECT_EQ(value_of(parse(many + "srun ./a\n").steps.at(0).environment, "V1"), "1");
    EXPECT_EQ(parse("#!/bin/bash\n" + std::string(50000, ')') + "\nsrun ./a\n").steps.size(), 1U);
}

// ---------------------------------------------------------------- where each step's options go

TEST(BatchScript, EveryStepOnALineHasItsOwnPlace) {
    BatchScript script = parse(
        "#!/bin/bash\n"
        "srun A && srun B; srun C || env X=1 /usr/bin/srun D | srun E\n"
        "echo 'srun in a string' ; srun \\\n"
        "  -N 2 ./f\n");
    ASSERT_EQ(script.steps.size(), 6U);
    const std::string& line = script.lines[1];
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(script.steps[i].options_line, 2);
        EXPECT_TRUE(line.substr(0, script.steps[i].options_column).ends_with("srun")) << i;
        EXPECT_EQ(line.substr(script.steps[i].options_column, 2), " " + std::string(1, static_cast<char>('A' + i)));
    }
    EXPECT_EQ(script.steps[5].options_line, 3);
    EXPECT_EQ(script.steps[5].options_column, script.lines[2].size() - 2);
    // Nor has one that ends inside a quote never closed (the rest of the script is in it).
    BatchScript open = parse("#!/bin/bash\nsrun ./a && /usr/bin/srun\"");
    ASSERT_EQ(open.steps.size(), 2U);
    EXPECT_EQ(open.steps[0].options_line, 2);
    EXPECT_EQ(open.steps[1].options_line, 0);
    // A srun word that an array expands among others has no place of its own.
    BatchScript array = parse("#!/bin/bash\nCMD=(srun -N 2)\n\"${CMD[@]}\" ./a\n");
    ASSERT_EQ(array.steps.size(), 1U);
    EXPECT_EQ(array.steps[0].options_line, 0);
}

TEST(BatchScript, CrLfLineBreaksAreNoted) {
    BatchScript script = parse("#!/bin/bash\r\nexport A=1\r\nsrun ./a\r\n");
    EXPECT_TRUE(script.crlf);
    ASSERT_EQ(script.steps.size(), 1U);
    EXPECT_EQ(value_of(script.steps[0].environment, "A"), "1");
    ASSERT_FALSE(script.notes.empty());
    EXPECT_NE(script.notes[0].find("line 1 ends with CR LF (DOS line breaks): sbatch refuses"), std::string::npos)
        << script.notes[0];
    EXPECT_FALSE(parse("#!/bin/bash\nsrun ./a\n").crlf);
}

TEST(BatchScript, RecognisesBatchScripts) {
    EXPECT_TRUE(looks_like_batch_script("#!/bin/bash\n"));
    EXPECT_TRUE(looks_like_batch_script("# job\n#SBATCH -N 2\n"));
    EXPECT_FALSE(looks_like_batch_script("apiVersion: v1\nkind: Pod\n"));
}

}  // namespace
}  // namespace launchguard::slurm_script
