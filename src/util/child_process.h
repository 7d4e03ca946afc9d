// Work that may never return, run where it cannot take the caller with it.
//
// A read of a sysfs attribute whose driver hangs, or of a stalled network
// filesystem, blocks in the kernel, often uninterruptibly: no alarm or
// signal handler in the same process gets control back. A health check that
// slurmd or node-problem-detector runs must still end on time, so such work
// runs in a forked child that the parent abandons at a deadline: the parent
// kills it, does not wait for a process the kernel may never release, and
// says which step was under way.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace launchguard {

// Whether a child forked now may run ordinary library code (hwloc, yaml-cpp)
// before it exits. fork() copies only the calling thread, and a lock that
// any other thread held at that moment stays held in the child for good, so
// in a multi-threaded process POSIX allows the child only async-signal-safe
// calls until it execs. slurmd and slurmstepd run several threads: a
// slurmstepd thread inside libhwloc when the plugin's loading
// thread forked to import hwloc XML left the child waiting on hwloc's lock,
// the loading thread waiting on the child, and the step never launched.
// False once this process has started a thread (glibc does not set it back).
bool forked_child_may_run_library_code() noexcept;

// In a forked child: the parent's handlers for crashes and alarms
// (slurmstepd's, a sanitizer's) go back to the default, so a crash or an
// alarm ends the child with that signal instead of an orderly exit, and the
// parent can tell them apart.
void restore_default_crash_signals();

// `note` records the step the body is in; the last note names the stall.
using StepNote = std::function<void(std::string_view step)>;
using ChildBody = std::function<std::string(const StepNote& note)>;

// Runs body in a forked child and returns what it returned. An error when
// the child misses the deadline (killed; the message names the deadline and
// the last step), crashes, or exits without a result. The body must not
// throw; the child leaves with _exit, so no destructor or atexit handler of
// the parent runs twice. The child starts with restore_default_crash_signals().
// For single-threaded callers (the CLI's node-check, the launch gate): in a
// process that has started a thread it forks nothing and returns an error
// (forked_child_may_run_library_code() says why).
Result<std::string> run_forked_with_deadline(const ChildBody& body, std::chrono::milliseconds deadline);

struct ProgramResult {
    int exit_code = -1;  // -1: ended by a signal
    std::string output;  // stdout and stderr together, at most kMaxProgramOutputBytes
};
inline constexpr std::size_t kMaxProgramOutputBytes = 64U << 10;

// Executes argv[0] (an absolute path: no shell, no PATH search) with the
// caller's environment plus `extra_env` ("NAME=value"), stdin from
// /dev/null and SIGPIPE at its default. An error when it cannot start or
// misses the deadline (killed).
Result<ProgramResult> run_program(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                                  std::chrono::milliseconds deadline);

}  // namespace launchguard
