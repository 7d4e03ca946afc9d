// `run`: act on the verdict and exec the workload. This part runs in the
// process that becomes the workload, so it does little: the judgement runs
// in a child (gate.cpp) and this process only prints, sets environment
// values and execs the workload as the runtime would.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gate/gate.h"
#include "util/text_escape.h"

extern char** environ;

namespace launchguard {
namespace {

void write_stderr(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
}

// Kubernetes shows this file as the container's termination message. A
// failure to write it is said on stderr, which has the whole report anyway.
void write_termination_log(const std::string& path, const std::string& message) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
    bool written = fd >= 0;
    std::string_view left = message;
    while (written && !left.empty()) {
        const ssize_t n = ::write(fd, left.data(), left.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            written = false;
            break;
        }
        left.remove_prefix(static_cast<std::size_t>(n));
    }
    const int saved = errno;
    if (fd >= 0) ::close(fd);
    if (!written)
        write_stderr("launchguard: cannot write the termination log " + printable_text(path) + ": " +
                     std::strerror(saved) + "\n");
}

// The gate is usually PID 1 of its container, and PID 1 gets only the
// signals it has a handler for: without one, the kubelet's SIGTERM for a pod
// deleted while the gate judges (up to --timeout) would be dropped, and the
// workload would start anyway, to be killed at the end of the grace period.
// So while it judges, SIGTERM and SIGINT end the gate as they would end a
// shell (128 + the signal), unless it was started with them ignored. Then
// the dispositions and the signal mask it was started with are put back, so
// the workload gets them unchanged.
extern "C" void end_before_the_workload(int signal_number) {
    static constexpr char kMessage[] = "launchguard: stopped by a signal before the workload started\n";
    [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    ::_exit(128 + signal_number);
}

class EndOnSignalWhileJudging {
public:
    EndOnSignalWhileJudging() {
        struct sigaction action {};
        action.sa_handler = end_before_the_workload;
        sigemptyset(&action.sa_mask);
        sigset_t ending;
        sigemptyset(&ending);
        for (std::size_t i = 0; i < kSignals.size(); ++i) {
            installed_[i] = ::sigaction(kSignals[i], &action, &started_with_[i]) == 0;
            if (installed_[i] && started_with_[i].sa_handler == SIG_IGN) {
                ::sigaction(kSignals[i], &started_with_[i], nullptr);
                installed_[i] = false;
            }
            if (installed_[i]) sigaddset(&ending, kSignals[i]);
        }
        // A signal blocked by whoever started the gate would wait for the
        // workload instead; one already pending ends the gate here.
        ::sigprocmask(SIG_UNBLOCK, &ending, &mask_started_with_);
    }
    EndOnSignalWhileJudging(const EndOnSignalWhileJudging&) = delete;
    EndOnSignalWhileJudging& operator=(const EndOnSignalWhileJudging&) = delete;
    ~EndOnSignalWhileJudging() { restore(); }

    void restore() {
        if (restored_) return;
        restored_ = true;
        ::sigprocmask(SIG_SETMASK, &mask_started_with_, nullptr);
        for (std::size_t i = 0; i < kSignals.size(); ++i)
            if (installed_[i]) ::sigaction(kSignals[i], &started_with_[i], nullptr);
    }

private:
    static constexpr std::array<int, 2> kSignals{SIGTERM, SIGINT};
    std::array<struct sigaction, 2> started_with_{};
    std::array<bool, 2> installed_{};
    sigset_t mask_started_with_{};
    bool restored_ = false;
};

int block(const GateRunOptions& options, const std::string& report) {
    write_stderr(report);
    write_termination_log(options.termination_log, termination_message(report));
    return kGateBlockExitCode;
}

// This process's environment with the operations applied in order.
std::vector<std::string> patched_environment(const std::vector<RemediationOp>& ops) {
    std::vector<std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
    for (const RemediationOp& op : ops) {
        const std::string prefix = op.name + "=";
        std::erase_if(env, [&prefix](const std::string& entry) { return entry.starts_with(prefix); });
        if (op.kind == RemediationOp::Kind::set_env) env.push_back(prefix + op.value);
    }
    return env;
}

// Runs the workload, or returns the exit code of a check-only run.
int proceed(const GateRunOptions& options) { return options.check_only ? 0 : exec_workload(options.argv); }

// The search the container runtime does before its execve (runc: Go's
// exec.LookPath over the PATH the container gets): a name with a slash as it
// is, else each PATH entry in turn. Unlike execvp there is no `/bin/sh FILE`
// fallback on ENOEXEC: a script without "#!" fails here as it fails without
// the gate. Returns the errno of the attempt that decides.
int exec_as_runtime(const std::string& name, char* const* args) {
    if (name.find('/') != std::string::npos) {
        ::execve(name.c_str(), args, environ);
        return errno;
    }
    const char* path_variable = std::getenv("PATH");
    const std::string path = path_variable != nullptr ? path_variable : "/usr/local/bin:/usr/bin:/bin";
    int error = ENOENT;
    std::size_t start = 0;
    while (start <= path.size()) {
        const std::size_t end = std::min(path.find(':', start), path.size());
        const std::string directory = end == start ? "." : path.substr(start, end - start);
        const std::string candidate = directory + "/" + name;
        ::execve(candidate.c_str(), args, environ);
        // Keep looking past a directory without it; remember a file found
        // but refused (as execvp does); anything else decides.
        if (errno == EACCES) {
            error = EACCES;
        } else if (errno != ENOENT && errno != ENOTDIR) {
            return errno;
        }
        start = end + 1;
    }
    return error;
}

}  // namespace

int exec_workload(const std::vector<std::string>& argv) {
    if (argv.empty()) {
        write_stderr("launchguard: no command to run after --\n");
        return kGateUsageExitCode;
    }
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::fflush(nullptr);
    // `launchguard gate` ignores SIGPIPE (cli/main.cpp); an ignored signal
    // stays ignored across exec, and the workload must get the default.
    std::signal(SIGPIPE, SIG_DFL);
    const int error = exec_as_runtime(argv.front(), args.data());
    // As a shell: 127 when there is no such file, 126 when there is one
    // that cannot be executed.
    const bool missing = error == ENOENT || error == ENOTDIR;
    write_stderr("launchguard: cannot execute " + printable_text(argv.front()) + ": " + std::strerror(error) + "\n");
    return missing ? kGateNotFoundExitCode : kGateNotExecutableExitCode;
}

int run_gate_unjudged(const GateRunOptions& options, const std::string& reason) {
    const std::string what =
        "the launch gate could not judge this launch (" + printable_text(reason) + "); the site's failure policy ";
    if (options.on_error == GateOnError::block) return block(options, "launchguard: " + what + "blocks it\n");
    write_stderr("launchguard: warning: " + what + "lets it run\n");
    return proceed(options);
}

int run_gate(const GateRunOptions& options) {
    if (options.mode == Mode::off) return proceed(options);
    EndOnSignalWhileJudging signals;
    auto verdict = judge_launch_with_deadline(options);
    // From here to exec is a few system calls; the workload's own handling
    // of signals takes over from there.
    signals.restore();
    if (!verdict) return run_gate_unjudged(options, verdict.error().to_string());
    if (verdict->kind == GateVerdict::Kind::block) return block(options, verdict->report);
    std::string lines;
    for (const auto& m : verdict->messages) lines += m + "\n";
    if (!lines.empty()) write_stderr(lines);
    if (!verdict->env.empty()) {
        // The whole patched environment is built first and put in place at
        // once: no launch runs with half a patch.
        static std::vector<std::string> patched;
        static std::vector<char*> entries;
        patched = patched_environment(verdict->env);
        entries.clear();
        for (auto& entry : patched) entries.push_back(entry.data());
        entries.push_back(nullptr);
        environ = entries.data();
    }
    return proceed(options);
}

}  // namespace launchguard
