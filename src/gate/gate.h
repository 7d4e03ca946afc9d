// The launch gate: the wrapped command of a Kubernetes GPU container. It
// judges the launch from inside the container, as the workload will see it
// (its root, environment, limits, cpuset, /dev and /sys), with the live
// rules, then either execs the workload with its argv and environment
// unchanged (allow, warn), execs it with environment values set (patch), or
// refuses to start it (block). docs/cli.md, "launchguard gate", is the
// user's description; the interface the webhook injects is fixed there too.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "finding/finding.h"
#include "finding/mode.h"
#include "util/error.h"

namespace launchguard {

// The exit codes of `launchguard-gate run`. A block (or a failure the site's
// policy treats as one) exits EX_CONFIG from sysexits.h: the container's
// configuration is wrong, which no restart fixes. A workload that cannot be
// executed exits as a shell would.
inline constexpr int kGateBlockExitCode = 78;
inline constexpr int kGateNotExecutableExitCode = 126;
inline constexpr int kGateNotFoundExitCode = 127;
inline constexpr int kGateUsageExitCode = 2;
// Kubernetes keeps at most this many bytes of a container's termination message.
inline constexpr std::size_t kTerminationMessageMaxBytes = 4096;

enum class GateOnError { allow, block };

struct GateRunOptions {
    std::string profile = "/launchguard/profile.yaml";  // a YAML file or an embedded profile's name
    Mode mode = Mode::enforce;
    GateOnError on_error = GateOnError::allow;
    std::string termination_log = "/dev/termination-log";
    std::chrono::milliseconds timeout{10000};
    bool check_only = false;        // judge and exit (a postStart hook): no ARGV
    std::vector<std::string> argv;  // the workload
    // A recorded launch instead of this process's own (tests; hidden
    // options): the task's root, the node's sysfs, an hwloc XML, a CPU list.
    std::string root = "/";
    std::optional<std::string> sysfs_root;
    std::optional<std::string> hwloc_xml;
    std::optional<std::string> cpus;
};

// What the gate does with a launch it has judged.
struct GateVerdict {
    enum class Kind { allow, warn, patch, block };
    Kind kind = Kind::allow;
    std::vector<std::string> messages;  // stderr lines: warnings and patches, in report order
    std::vector<RemediationOp> env;     // patch: set_env and unset_env operations to apply before exec
    std::string report;                 // block: what is wrong and how to fix it
};

// Judges the launch in this process, with no deadline. An error when the
// gate cannot judge (an unreadable or unknown profile, a context that cannot
// be built).
Result<GateVerdict> judge_launch(const GateRunOptions& options);
// The same in a forked child abandoned at options.timeout, so that a read
// that never returns (a hung driver's sysfs attribute) cannot hold the
// container: the deadline, a crash or an exception become errors.
Result<GateVerdict> judge_launch_with_deadline(const GateRunOptions& options);

// The verdict as the child hands it to the parent (JSON).
std::string encode_verdict(const GateVerdict& verdict);
Result<GateVerdict> decode_verdict(std::string_view text);

// `report` cut to what Kubernetes keeps of a termination message: at most
// kTerminationMessageMaxBytes, never ending inside a UTF-8 sequence, and
// saying that it was cut.
std::string termination_message(std::string_view report);

// `run`: mode off execs at once; otherwise judge, act on the verdict or the
// failure policy, exec. Returns only when it does not exec: the exit code.
int run_gate(const GateRunOptions& options);

// The failure policy for a launch the gate could not judge, `reason` saying
// why: --on-error allow warns and proceeds, block reports and exits 78.
int run_gate_unjudged(const GateRunOptions& options, const std::string& reason);

// Execs argv with this process's environment as the container runtime does
// (execve on the PATH lookup, no shell fallback); returns only on failure:
// kGateNotFoundExitCode or kGateNotExecutableExitCode, after a line on stderr.
int exec_workload(const std::vector<std::string>& argv);

struct GateInstallOptions {
    std::string into;                         // the shared volume
    std::optional<std::string> profile_yaml;  // the profile's text
    std::optional<std::string> profile_name;  // or an embedded profile
    std::string self = "/proc/self/exe";      // the executable to copy
};
inline constexpr std::string_view kGateExecutableName = "launchguard-gate";
inline constexpr std::string_view kGateProfileName = "profile.yaml";

// `install`: copies `self` to INTO/launchguard-gate (0555) and the profile to
// INTO/profile.yaml (0444), each written beside and renamed. The profile is
// parsed first, so a profile that every run would refuse fails the install.
Status install_gate(const GateInstallOptions& options);

// Both front ends (`launchguard gate ...` and `launchguard-gate ...`) parse
// the same command line here: argv[0] names the program, argv[1] is
// `install` or `run`. Returns the exit code when it does not exec.
int gate_main(int argc, char** argv);

}  // namespace launchguard
