// The launch gate's decisions, driven through the real static
// launchguard-gate: a recorded launch (an empty container root, the
// 32em64t hwloc XML, a gathered sysfs tree, CPUs 0-7) whose clean environment
// draws no finding, and environments that draw a warning, a patch or a
// block. The workload is /usr/bin/env or a shell that prints its arguments,
// so each test sees exactly what the gate exec'd.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gate/gate.h"
#include "probe/temp_tree.h"
#include "support/run_command.h"
#include "support/shared_fixtures.h"
#include "support/text.h"

namespace launchguard {
namespace {

using testing::quote_arg;
using testing::read_all;
using testing::run_command;

// tests/fixtures first, then the public fixtures (support/shared_fixtures.h).
std::string fixture_path(const std::string& relative) {
    std::string own = std::string(LAUNCHGUARD_FIXTURES) + "/" + relative;
    return std::filesystem::exists(own) ? own : testing::shared_fixture_path(relative);
}

constexpr const char* kCleanEnv = "HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8";

std::set<std::string> lines_of(const std::string& text) {
    std::set<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.insert(line);
    return lines;
}

class GateRun : public ::testing::Test {
protected:
    test::TempTree tree;

    void SetUp() override { tree.mkdir("root"); }

    [[nodiscard]] std::string log() const { return tree.path("termination-log"); }

    // `env -i ENV launchguard-gate run <the recorded launch> OPTIONS -- WORKLOAD`.
    [[nodiscard]] std::string line(const std::string& env, const std::string& options, const std::string& workload,
                                   const std::string& program = quote_arg(LAUNCHGUARD_GATE)) const {
        return "env -i " + env + " " + program + " run --root " + quote_arg(tree.path("root")) + " --hwloc-xml " +
               quote_arg(fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml")) + " --sysfs-root " +
               quote_arg(fixture_path("sysfs/dev-machine-gathered")) + " --cpus 0-7 --termination-log " +
               quote_arg(log()) + " " + options + (workload.empty() ? "" : " -- " + workload);
    }
};

TEST_F(GateRun, AllowExecsTheWorkloadWithItsEnvironmentUnchanged) {
    const std::string env = std::string(kCleanEnv) + " NCCL_DEBUG=WARN 'ODD=a b=c' EMPTY=";
    auto r = run_command(line(env, "--profile default", "/usr/bin/env"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");  // allow says nothing
    EXPECT_EQ(lines_of(r.out), (std::set<std::string>{"HOME=/root", "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
                                                      "NCCL_DEBUG=WARN", "ODD=a b=c", "EMPTY="}));
    EXPECT_FALSE(std::filesystem::exists(log()));
}

// execve(2) takes any string as an environment entry, "=x" too, which no
// shell or `env` can pass: the gate is started here with exactly `envp`.
testing::CommandResult exec_gate(const test::TempTree& tree, const std::vector<std::string>& argv,
                                 const std::vector<std::string>& envp) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> env;
    for (const auto& e : envp) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
    const std::string out = tree.path("exec.out");
    const std::string err = tree.path("exec.err");
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out_fd < 0 || err_fd < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) ::_exit(126);
        ::execve(args[0], args.data(), env.data());
        ::_exit(127);
    }
    int status = 0;
    testing::CommandResult result;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = read_all(out);
    result.err = read_all(err);
    return result;
}

TEST_F(GateRun, AnEnvironmentEntryWithoutANameIsJudgedAroundNotSkipped) {
    const std::vector<std::string> argv = {LAUNCHGUARD_GATE,
                                           "run",
                                           "--root",
                                           tree.path("root"),
                                           "--hwloc-xml",
                                           fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml"),
                                           "--sysfs-root",
                                           fixture_path("sysfs/dev-machine-gathered"),
                                           "--cpus",
                                           "0-7",
                                           "--termination-log",
                                           log(),
                                           "--profile",
                                           "default",
                                           "--",
                                           "/usr/bin/env"};
    auto r = exec_gate(tree, argv, {"=x", "HOME=/root", "PATH=/usr/bin:/bin", "=", "NCCL_DEBUG=INFO"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.rfind("launchguard: warning: nccl.debug-verbose: NCCL_DEBUG=INFO", 0), 0U) << r.err;
    // Warned, not changed: the workload gets the entries as they were.
    EXPECT_EQ(lines_of(r.out),
              (std::set<std::string>{"=x", "HOME=/root", "PATH=/usr/bin:/bin", "=", "NCCL_DEBUG=INFO"}))
        << r.out;
}

TEST_F(GateRun, AllowKeepsEveryArgumentAsGivenEvenDashesAndOptions) {
    // Only the first `--` after `run` separates; later ones, options and
    // empty or non-ASCII words belong to the workload.
    auto r = run_command(line(kCleanEnv, "--profile default",
                              "/bin/sh -c 'for a in \"$0\" \"$@\"; do printf \"[%s]\\n\" \"$a\"; done' "
                              "first 'a b' '' -- --mode off 'caf\xc3\xa9' '*'"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "[first]\n[a b]\n[]\n[--]\n[--mode]\n[off]\n[caf\xc3\xa9]\n[*]\n");
}

TEST_F(GateRun, WarnPrintsOneLinePerFindingThenExecsUnchanged) {
    auto r = run_command(line(std::string(kCleanEnv) + " NCCL_DEBUG=INFO", "--profile default", "/usr/bin/env"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.rfind("launchguard: warning: nccl.debug-verbose: NCCL_DEBUG=INFO", 0), 0U) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(lines_of(r.out).count("NCCL_DEBUG=INFO")) << r.out;  // warned, not changed
}

TEST_F(GateRun, PatchSetsTheValueBeforeExecAndSaysSo) {
    tree.write("profile.yaml", "name: gate-test\nrules:\n  nccl.debug-verbose: patch\n");
    auto r = run_command(line(std::string(kCleanEnv) + " NCCL_DEBUG=INFO",
                              "--profile " + quote_arg(tree.path("profile.yaml")), "/usr/bin/env"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "launchguard: patched: NCCL_DEBUG=WARN (nccl.debug-verbose)\n");
    auto env = lines_of(r.out);
    EXPECT_TRUE(env.count("NCCL_DEBUG=WARN")) << r.out;
    EXPECT_FALSE(env.count("NCCL_DEBUG=INFO")) << r.out;
    EXPECT_EQ(env.size(), 4U) << r.out;  // the three others untouched, nothing added
}

TEST_F(GateRun, PatchModeOffWarnsInsteadAndCheckOnlyCannotPatch) {
    tree.write("profile.yaml", "name: gate-test\nrules:\n  nccl.debug-verbose: patch\n");
    const std::string env = std::string(kCleanEnv) + " NCCL_DEBUG=INFO";
    const std::string profile = "--profile " + quote_arg(tree.path("profile.yaml"));
    auto warn = run_command(line(env, profile + " --mode warn", "/usr/bin/env"));
    ASSERT_EQ(warn.exit_code, 0) << warn.err;
    EXPECT_NE(warn.err.find("launchguard: warning: nccl.debug-verbose"), std::string::npos) << warn.err;
    EXPECT_TRUE(lines_of(warn.out).count("NCCL_DEBUG=INFO"));

    auto check = run_command(line(env, profile + " --check-only", ""));
    EXPECT_EQ(check.exit_code, 0) << check.err;
    EXPECT_NE(check.err.find("not patched: the container is already running; set NCCL_DEBUG=WARN"), std::string::npos)
        << check.err;
}

TEST_F(GateRun, BlockReportsWhatAndHowToFixAndNeverRunsTheWorkload) {
    auto r = run_command(line(std::string(kCleanEnv) + " NCCL_IB_HCA=mlx9", "--profile default",
                              "/bin/sh -c 'touch " + tree.path("ran") + "'"));
    EXPECT_EQ(r.exit_code, kGateBlockExitCode) << r.err;
    EXPECT_FALSE(std::filesystem::exists(tree.path("ran")));
    const std::string report = read_all(log());
    EXPECT_NE(report.find("BLOCK  net.hca-matches-nothing"), std::string::npos) << report;
    EXPECT_NE(report.find("-> fix:"), std::string::npos) << report;
    EXPECT_LE(report.size(), kTerminationMessageMaxBytes);
    EXPECT_NE(r.err.find(report.substr(0, 200)), std::string::npos) << r.err;  // and on stderr

    auto check = run_command(line(std::string(kCleanEnv) + " NCCL_IB_HCA=mlx9", "--profile default --check-only", ""));
    EXPECT_EQ(check.exit_code, kGateBlockExitCode) << check.err;
}

TEST_F(GateRun, ModeOffExecsWithoutJudging) {
    auto r = run_command(line(std::string(kCleanEnv) + " NCCL_IB_HCA=mlx9",
                              "--profile /no/such/profile.yaml --mode off", "/bin/echo ran"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ran\n");
    EXPECT_EQ(r.err, "");
}

TEST_F(GateRun, AnUnloadableProfileFollowsTheFailurePolicy) {
    auto allowed = run_command(line(kCleanEnv, "--profile /no/such/profile.yaml", "/bin/echo ran"));
    EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
    EXPECT_EQ(allowed.out, "ran\n");
    EXPECT_EQ(allowed.err.rfind("launchguard: warning: the launch gate could not judge this launch (profile "
                                "/no/such/profile.yaml: ",
                                0),
              0U)
        << allowed.err;
    EXPECT_NE(allowed.err.find("); the site's failure policy lets it run\n"), std::string::npos) << allowed.err;

    auto unknown = run_command(line(kCleanEnv, "--profile no-such-embedded-name --on-error block", "/bin/echo ran"));
    EXPECT_EQ(unknown.exit_code, kGateBlockExitCode) << unknown.err;
    EXPECT_EQ(unknown.out, "");
    EXPECT_NE(read_all(log()).find("could not judge this launch"), std::string::npos);
    EXPECT_NE(read_all(log()).find("the site's failure policy blocks it"), std::string::npos);
}

TEST_F(GateRun, AJudgementPastTheTimeoutFollowsTheFailurePolicy) {
    // No judgement (a fork, the profile, the hwloc XML imported in a child
    // of its own, the rules) fits in a millisecond: the deadline passes on
    // any machine.
    const std::string slow = "--profile default --timeout 0.001";
    auto allowed = run_command(line(kCleanEnv, slow, "/bin/echo ran"));
    EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
    EXPECT_EQ(allowed.out, "ran\n");
    EXPECT_NE(allowed.err.find("did not finish within 0.001 s"), std::string::npos) << allowed.err;
    EXPECT_NE(allowed.err.find("lets it run"), std::string::npos) << allowed.err;

    auto blocked = run_command(line(kCleanEnv, slow + " --on-error block", "/bin/echo ran"));
    EXPECT_EQ(blocked.exit_code, kGateBlockExitCode) << blocked.err;
    EXPECT_EQ(blocked.out, "");
    EXPECT_NE(read_all(log()).find("did not finish within 0.001 s"), std::string::npos);
}

// Starts COMMAND with SIGNAL blocked, and pending too where `pending`: a
// blocked signal stays pending across exec, so the gate meets it as one
// that arrived while it judged, without racing the judgement.
std::string with_signal_blocked(int signal_number, bool pending, const std::string& command) {
    return "python3 -c 'import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {" +
           std::to_string(signal_number) + "}); " +
           (pending ? "os.kill(os.getpid(), " + std::to_string(signal_number) + "); " : "") +
           "os.execvp(sys.argv[1], sys.argv[1:])' " + command;
}

TEST_F(GateRun, ASignalWhileItJudgesEndsTheGateBeforeTheWorkload) {
    // The kubelet's SIGTERM for a pod deleted while the gate judges: the
    // workload must not start. (As PID 1 the gate would not even get the
    // signal without a handler of its own.)
    auto r = run_command(with_signal_blocked(SIGTERM, true, line(kCleanEnv, "--profile default", "/bin/echo ran")));
    EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("stopped by a signal before the workload started"), std::string::npos) << r.err;
}

TEST_F(GateRun, TheWorkloadGetsTheSignalMaskTheGateWasStartedWith) {
    // The gate unblocks SIGINT while it judges and blocks it again before
    // exec: the workload sees the same mask as under --mode off, which
    // execs at once.
    // grep itself reads its mask: a shell (dash) would clear it first.
    const std::string show_mask = "/bin/grep SigBlk /proc/self/status";
    auto judged = run_command(with_signal_blocked(SIGINT, false, line(kCleanEnv, "--profile default", show_mask)));
    auto unjudged =
        run_command(with_signal_blocked(SIGINT, false, line(kCleanEnv, "--profile default --mode off", show_mask)));
    ASSERT_EQ(judged.exit_code, 0) << judged.err;
    ASSERT_EQ(unjudged.exit_code, 0) << unjudged.err;
    EXPECT_NE(judged.out, "SigBlk:\t0000000000000000\n");  // SIGINT is blocked in both
    EXPECT_EQ(judged.out, unjudged.out);
}

TEST_F(GateRun, AWorkloadThatCannotRunExitsAsAShellWould) {
    auto missing = run_command(line(kCleanEnv, "--profile default", "/no/such/program"));
    EXPECT_EQ(missing.exit_code, kGateNotFoundExitCode) << missing.err;
    EXPECT_NE(missing.err.find("cannot execute /no/such/program"), std::string::npos) << missing.err;
    auto not_on_path = run_command(line(kCleanEnv, "--profile default", "no-such-program-on-path"));
    EXPECT_EQ(not_on_path.exit_code, kGateNotFoundExitCode) << not_on_path.err;

    tree.write("not-executable", "#!/bin/sh\necho ran\n");
    ::chmod(tree.path("not-executable").c_str(), 0644);
    auto denied = run_command(line(kCleanEnv, "--profile default", quote_arg(tree.path("not-executable"))));
    EXPECT_EQ(denied.exit_code, kGateNotExecutableExitCode) << denied.err;
}

TEST_F(GateRun, AScriptWithoutAnInterpreterLineFailsAsItWouldWithoutTheGate) {
    // The runtime execve()s the file and gets ENOEXEC; execvp would run it
    // with /bin/sh instead, so the gate must not.
    tree.mkdir("bin");
    tree.write("bin/no-shebang", "echo ran\n");
    ::chmod(tree.path("bin/no-shebang").c_str(), 0755);
    auto by_path = run_command(line(kCleanEnv, "--profile default", quote_arg(tree.path("bin/no-shebang"))));
    EXPECT_EQ(by_path.exit_code, kGateNotExecutableExitCode) << by_path.err;
    EXPECT_EQ(by_path.out, "");
    EXPECT_NE(by_path.err.find("Exec format error"), std::string::npos) << by_path.err;
    const std::string on_path = "HOME=/root PATH=" + tree.path("bin") + ":/usr/bin:/bin LANG=C.UTF-8";
    auto by_name = run_command(line(on_path, "--profile default", "no-shebang"));
    EXPECT_EQ(by_name.exit_code, kGateNotExecutableExitCode) << by_name.err;
    EXPECT_EQ(by_name.out, "");

    // The same file with an interpreter line runs, found through PATH.
    tree.write("bin/with-shebang", "#!/bin/sh\necho ran\n");
    ::chmod(tree.path("bin/with-shebang").c_str(), 0755);
    auto runs = run_command(line(on_path, "--profile default", "with-shebang"));
    EXPECT_EQ(runs.exit_code, 0) << runs.err;
    EXPECT_EQ(runs.out, "ran\n");
}

TEST_F(GateRun, UsageErrors) {
    EXPECT_EQ(run_command(line(kCleanEnv, "--profile default", "")).exit_code, kGateUsageExitCode);
    EXPECT_EQ(run_command(line(kCleanEnv, "--check-only", "/bin/true")).exit_code, kGateUsageExitCode);
    EXPECT_EQ(run_command(quote_arg(LAUNCHGUARD_GATE) + " frobnicate").exit_code, kGateUsageExitCode);
    EXPECT_EQ(run_command(quote_arg(LAUNCHGUARD_GATE) + " --help").exit_code, 0);
}

TEST_F(GateRun, ARunLineThatDoesNotParseStillFollowsTheFailurePolicy) {
    // A webhook newer than the gate image may pass an option this gate lacks.
    auto allowed = run_command(line(kCleanEnv, "--profile default --future-option x", "/bin/echo ran"));
    EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
    EXPECT_EQ(allowed.out, "ran\n");
    EXPECT_NE(allowed.err.find("its command line does not parse"), std::string::npos) << allowed.err;
    auto blocked =
        run_command(line(kCleanEnv, "--profile default --future-option x --on-error block", "/bin/echo ran"));
    EXPECT_EQ(blocked.exit_code, kGateBlockExitCode) << blocked.err;
}

TEST_F(GateRun, TheCliSubcommandIsTheSameGate) {
    const std::string cli = quote_arg(LAUNCHGUARD_CLI) + " gate";
    auto r = run_command(line(std::string(kCleanEnv) + " NCCL_DEBUG=INFO", "--profile default", "/usr/bin/env", cli));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.rfind("launchguard: warning: nccl.debug-verbose:", 0), 0U) << r.err;
    EXPECT_EQ(lines_of(r.out).size(), 4U) << r.out;
    auto blocked =
        run_command(line(std::string(kCleanEnv) + " NCCL_IB_HCA=mlx9", "--profile default", "/bin/true", cli));
    EXPECT_EQ(blocked.exit_code, kGateBlockExitCode) << blocked.err;
}

TEST(GateInstall, CopiesTheExecutableAndTheProfileReadOnly) {
    test::TempTree tree;
    const std::string yaml = "name: site\nrules:\n  power.governor: off\n";
    auto r = run_command(quote_arg(LAUNCHGUARD_GATE) + " install --into " + quote_arg(tree.root()) +
                         " --profile-yaml " + quote_arg(yaml));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_all(tree.path("launchguard-gate")), read_all(LAUNCHGUARD_GATE));
    EXPECT_EQ(read_all(tree.path("profile.yaml")), yaml);
    struct stat st {};
    ASSERT_EQ(::stat(tree.path("launchguard-gate").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0555U);
    ASSERT_EQ(::stat(tree.path("profile.yaml").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0444U);
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tree.root())) ++entries;
    EXPECT_EQ(entries, 2U);  // no temporary file left behind

    // The installed copy runs, and a second install replaces the files.
    EXPECT_EQ(run_command(quote_arg(tree.path("launchguard-gate")) + " run --mode off -- /bin/true").exit_code, 0);
    r = run_command(quote_arg(LAUNCHGUARD_GATE) + " install --into " + quote_arg(tree.root()) + " --profile default");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(read_all(tree.path("profile.yaml")).find("name: default"), std::string::npos);
}

TEST(GateInstall, RefusesWhatEveryRunWouldRefuse) {
    test::TempTree tree;
    auto missing = run_command(quote_arg(LAUNCHGUARD_GATE) + " install --into " + quote_arg(tree.path("nope")));
    EXPECT_EQ(missing.exit_code, kGateUsageExitCode);
    EXPECT_NE(missing.err.find("not a directory"), std::string::npos) << missing.err;
    auto bad_yaml = run_command(quote_arg(LAUNCHGUARD_GATE) + " install --into " + quote_arg(tree.root()) +
                                " --profile-yaml " + quote_arg("name: ["));
    EXPECT_EQ(bad_yaml.exit_code, kGateUsageExitCode);
    EXPECT_NE(bad_yaml.err.find("--profile-yaml"), std::string::npos) << bad_yaml.err;
    auto unknown_rule = run_command(quote_arg(LAUNCHGUARD_GATE) + " install --into " + quote_arg(tree.root()) +
                                    " --profile-yaml " + quote_arg("name: x\nrules:\n  no.such-rule: off\n"));
    EXPECT_EQ(unknown_rule.exit_code, kGateUsageExitCode);
    auto unknown_name =
        run_command(quote_arg(LAUNCHGUARD_GATE) + " install --into " + quote_arg(tree.root()) + " --profile nope");
    EXPECT_EQ(unknown_name.exit_code, kGateUsageExitCode);
    EXPECT_TRUE(std::filesystem::is_empty(tree.root()));  // nothing half-installed
}

TEST(GateTerminationMessage, FitsKubernetesAndNeverSplitsACharacter) {
    EXPECT_EQ(termination_message("short\n"), "short\n");
    std::string exact(kTerminationMessageMaxBytes, 'x');
    EXPECT_EQ(termination_message(exact), exact);
    // Two-byte characters at every offset the cut could fall on.
    for (std::size_t pad = 0; pad < 4; ++pad) {
        std::string report = std::string(pad, 'a');
        while (report.size() < 2 * kTerminationMessageMaxBytes) report += "\xc3\xa9";
        const std::string cut = termination_message(report);
        EXPECT_LE(cut.size(), kTerminationMessageMaxBytes);
        EXPECT_NE(cut.find("[cut to the 4096 bytes Kubernetes keeps"), std::string::npos);
        const std::string body = cut.substr(0, cut.find("\n[cut"));
        EXPECT_EQ(body.size() % 2, pad % 2) << "a character was split at pad " << pad;
        EXPECT_EQ(static_cast<unsigned char>(body.back()), 0xa9U);
    }
    // A cut near a line end keeps whole lines.
    std::string lines;
    while (lines.size() < kTerminationMessageMaxBytes + 500) lines += std::string(99, 'l') + "\n";
    const std::string cut = termination_message(lines);
    EXPECT_EQ(cut.substr(0, cut.find("\n[cut")).size() % 100, 99U);
}

TEST(GateVerdictWire, RoundTripsAndRefusesGarbage) {
    GateVerdict v;
    v.kind = GateVerdict::Kind::patch;
    v.messages = {"launchguard: patched: A=1 (r)", "caf\xc3\xa9"};
    v.env = {RemediationOp::set_env("A", "1 2"), RemediationOp::unset_env("B")};
    v.report = "report";
    auto back = decode_verdict(encode_verdict(v));
    ASSERT_TRUE(back) << back.error().to_string();
    EXPECT_EQ(back->kind, GateVerdict::Kind::patch);
    EXPECT_EQ(back->messages, v.messages);
    ASSERT_EQ(back->env.size(), 2U);
    EXPECT_EQ(back->env[0].kind, RemediationOp::Kind::set_env);
    EXPECT_EQ(back->env[0].value, "1 2");
    EXPECT_EQ(back->env[1].kind, RemediationOp::Kind::unset_env);
    EXPECT_EQ(back->report, "report");
    EXPECT_FALSE(decode_verdict("not json"));
    EXPECT_FALSE(decode_verdict("{\"kind\":\"maybe\",\"messages\":[],\"env\":[],\"report\":\"\"}"));
    auto error = decode_verdict("{\"error\":\"profile x: no such file\"}");
    ASSERT_FALSE(error);
    EXPECT_EQ(error.error().message, "profile x: no such file");
}

}  // namespace
}  // namespace launchguard
