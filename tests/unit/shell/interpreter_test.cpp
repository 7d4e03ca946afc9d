// The one shell reader both spec front ends use: what it decides, what it
// leaves unknown (naming the construct), and what it reads as able to set
// any variable.
#include <gtest/gtest.h>

#include "shell/interpreter.h"
#include "shell/lexer.h"
#include "shell/pattern.h"
#include "shell/wrappers.h"

namespace launchguard::shell {
namespace {

struct Read {
    std::vector<std::string> notes;
    Interpreter shell{notes, 0};

    explicit Read(std::string_view text, const Variables& seed = {}) {
        for (const auto& [name, variable] : seed) shell.variables[name] = variable;
        shell.run(lex(text, 1, notes));
    }

    // The exported value, "<unknown: why>", or "<unset>".
    std::string exported(const std::string& name) const {
        auto vars = shell.exported_variables();
        auto it = vars.find(name);
        if (it == vars.end()) return "<unset>";
        return it->second.value ? *it->second.value : "<unknown: " + it->second.why_unknown + ">";
    }
};

Variables nodes(const std::string& count) {
    Variable v;
    v.value = count;
    return {{"SLURM_JOB_NUM_NODES", v}};
}

TEST(ShellLexer, OperatorsSayHowCommandsAreJoined) {
    std::vector<std::string> notes;
    auto commands = lex("a && b || c | d; e &\nf &&\n  g", 1, notes);
    ASSERT_EQ(commands.size(), 7U);
    EXPECT_EQ(commands[0].joint, RawCommand::Joint::none);
    EXPECT_EQ(commands[1].joint, RawCommand::Joint::and_then);
    EXPECT_EQ(commands[2].joint, RawCommand::Joint::or_else);
    EXPECT_EQ(commands[3].joint, RawCommand::Joint::pipe);
    EXPECT_EQ(commands[4].joint, RawCommand::Joint::none);
    EXPECT_EQ(commands[5].joint, RawCommand::Joint::none);
    EXPECT_EQ(commands[6].joint, RawCommand::Joint::and_then);  // across the line break
    EXPECT_EQ(commands[6].line, 3);
    EXPECT_TRUE(notes.empty());
}

TEST(ShellInterpreter, ExportsUnsetAndTheExportAttribute) {
    Read read(
        "export NCCL_DEBUG=INFO A=1\nB=2\nexport B\nexport -n A\nC=3; declare -x C; declare +x C\n"
        "export D=x; unset D\nexport E=$(hostname)\n");
    EXPECT_EQ(read.exported("NCCL_DEBUG"), "INFO");
    EXPECT_EQ(read.exported("A"), "<unset>");
    EXPECT_EQ(read.exported("B"), "2");
    EXPECT_EQ(read.exported("C"), "<unset>");
    EXPECT_EQ(read.exported("D"), "<unset>");
    EXPECT_EQ(read.exported("E"), "<unknown: $(hostname)>");
    EXPECT_TRUE(read.shell.open_sources.empty());  // $(hostname) sets only E
}

TEST(ShellInterpreter, ATestTheScriptDecidesDecidesItsBranch) {
    const std::string script =
        "if [[ $SLURM_JOB_NUM_NODES -gt 1 ]]; then\n"
        "  export NCCL_IB_DISABLE=0\n"
        "else\n"
        "  export NCCL_IB_DISABLE=1\n"
        "fi\n";
    EXPECT_EQ(Read(script, nodes("2")).exported("NCCL_IB_DISABLE"), "0");
    EXPECT_EQ(Read(script, nodes("1")).exported("NCCL_IB_DISABLE"), "1");
    // Not decided: unknown, naming the line of the if.
    EXPECT_EQ(Read(script).exported("NCCL_IB_DISABLE"),
              "<unknown: set inside the if on line 1, so only when a condition the script does not decide holds>");

    // [ -n "$X" ] on a known X; elif; a test joined with && and ||.
    Read known(
        "X=mlx5\nif [ -z \"$X\" ]; then export A=1; elif [ -n \"$X\" ]; then export A=2; fi\n"
        "[ \"$X\" = mlx5 ] && export B=yes\n[ \"$X\" != mlx5 ] && export C=no\n"
        "[ \"$X\" = other ] || export D=fallback\n");
    EXPECT_EQ(known.exported("A"), "2");
    EXPECT_EQ(known.exported("B"), "yes");
    EXPECT_EQ(known.exported("C"), "<unset>");
    EXPECT_EQ(known.exported("D"), "fallback");

    // A variable the script never sets may come from the submitting shell.
    Read undecided("[ -n \"$HCA\" ] && export NCCL_IB_HCA=$HCA\n[[ -f /etc/x ]] && {\n  export E=1\n}\n");
    EXPECT_EQ(undecided.exported("NCCL_IB_HCA"),
              "<unknown: set inside the && / || list on line 1, so only when a condition the script does not "
              "decide holds>");
    EXPECT_EQ(undecided.exported("E"),
              "<unknown: set inside the && / || list on line 2, so only when a condition the script does not "
              "decide holds>");
}

TEST(ShellInterpreter, LoopsAndCaseKeepWhatTheySetUnknown) {
    Read read("for i in 1 2; do export A=$i; done\ncase $X in\n  a) export B=1;;\nesac\nexport C=3\n");
    EXPECT_NE(read.exported("A").find("inside the loop on line 1"), std::string::npos);
    EXPECT_NE(read.exported("B").find("inside the case on line 2"), std::string::npos);
    EXPECT_EQ(read.exported("C"), "3");
}

TEST(ShellInterpreter, WhatMaySetAnyVariableIsKeptWithItsLine) {
    Read read(
        "#!/bin/bash\nsource /etc/profile.d/nccl.sh\n. ./env.sh\nmodule load cuda/12.4 nccl\nmodule list\n"
        "eval \"$(conda shell.bash hook)\"\nexport $(cat vars.env | xargs)\nexport NCCL_NET=IB\n");
    ASSERT_EQ(read.shell.open_sources.size(), 5U);
    EXPECT_EQ(read.shell.open_sources[0], "line 2: source /etc/profile.d/nccl.sh may set any variable");
    EXPECT_EQ(read.shell.open_sources[1], "line 3: . ./env.sh may set any variable");
    EXPECT_EQ(read.shell.open_sources[2], "line 4: module load cuda/12.4 nccl may set any variable");
    EXPECT_EQ(read.shell.open_sources[3], "line 6: eval may set any variable");
    EXPECT_EQ(read.shell.open_sources[4], "line 7: export $(cat vars.env | xargs) may set any variable");
    EXPECT_EQ(read.exported("NCCL_NET"), "IB");  // what the script sets itself stays decided

    // Inside a subshell it ends with the subshell; in a skipped branch it never runs.
    Read scoped("( source a.sh )\nif [[ 1 -eq 2 ]]; then source b.sh; fi\nif [[ -f x ]]; then source c.sh; fi\n");
    ASSERT_EQ(scoped.shell.open_sources.size(), 1U);
    EXPECT_EQ(scoped.shell.open_sources[0],
              "line 3: source c.sh (inside the if on line 3, so only when a condition the script does not decide "
              "holds) may set any variable");
}

TEST(ShellInterpreter, TheProgramACommandRunsIsFollowed) {
    std::vector<std::string> notes;
    Interpreter shell(notes, 0);
    shell.run(
        lex("NCCL_DEBUG=INFO env NCCL_ALGO=Ring bash -c 'export NCCL_PROTO=Simple; "
            "NCCL_TOPO_FILE=/opt/topo.xml python train.py; source /x.sh'\n",
            1, notes));
    const auto& env = shell.command_environment;
    ASSERT_EQ(env.count("NCCL_DEBUG"), 1U);
    EXPECT_EQ(env.at("NCCL_DEBUG").value, "INFO");
    EXPECT_EQ(env.at("NCCL_ALGO").value, "Ring");
    EXPECT_EQ(env.at("NCCL_PROTO").value, "Simple");
    EXPECT_EQ(env.at("NCCL_TOPO_FILE").value, "/opt/topo.xml");
    ASSERT_EQ(shell.open_sources.size(), 1U);
    EXPECT_EQ(shell.open_sources[0], "line 1: source /x.sh may set any variable");
    EXPECT_TRUE(shell.exported_variables().empty());  // none of it changes the outer shell
}

TEST(ShellInterpreter, PatternsKeepReferencesToTheStartingEnvironment) {
    std::vector<std::string> notes;
    Interpreter shell(notes, 0);
    shell.keep_patterns = true;
    shell.run(lex("N=4; export A=${HCA}_0 B='$HCA' C=$N D=\"\\$HCA$HCA\" E=${HCA:-x}\nexport F=$A\n", 1, notes));
    auto vars = shell.exported_variables();
    EXPECT_EQ(vars["A"].pattern, "${HCA}_0");
    EXPECT_EQ(vars["B"].value, "$HCA");
    EXPECT_EQ(vars["C"].value, "4");
    EXPECT_FALSE(vars["D"].pattern);  // a literal and an expanded '$': the text cannot tell them apart
    EXPECT_FALSE(vars["E"].pattern);
    EXPECT_EQ(vars["F"].pattern, "${HCA}_0");
    EXPECT_EQ(expand_pattern(*vars["A"].pattern, {{"HCA", "mlx5"}}), "mlx5_0");
    EXPECT_FALSE(expand_pattern(*vars["A"].pattern, {}));
}

TEST(ShellWrappers, OneListForEveryFrontEnd) {
    auto words = [](std::initializer_list<const char*> texts) {
        std::vector<Word> out;
        for (const char* text : texts) out.push_back(Word{text, true, {}, std::nullopt, {}});
        return out;
    };
    auto wrapped = skip_wrappers(
        words({"timeout", "-s", "INT", "2h", "/usr/bin/env", "-u", "X", "Y=1", "nice", "-n", "5", "srun", "-N2"}));
    ASSERT_TRUE(wrapped);
    EXPECT_EQ(wrapped->program, 11U);
    ASSERT_EQ(wrapped->edits.size(), 2U);
    EXPECT_EQ(wrapped->edits[0].kind, EnvEdit::Kind::unset);
    EXPECT_EQ(wrapped->edits[1].name, "Y");
    EXPECT_FALSE(skip_wrappers(words({"command", "-v", "srun"})));
    auto sudo = skip_wrappers(words({"sudo", "-u", "me", "srun"}));
    ASSERT_TRUE(sudo);
    EXPECT_EQ(sudo->edits.front().kind, EnvEdit::Kind::unknown);  // without -E
    EXPECT_TRUE(is_wrapper("stdbuf"));
    EXPECT_FALSE(is_wrapper("srun"));
}

}  // namespace
}  // namespace launchguard::shell
