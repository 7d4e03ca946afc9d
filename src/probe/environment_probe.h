// The task's environment, as NCCL's getenv() will see it. Values are kept
// literally: a quote or a trailing space in a value is what NCCL reads, and
// rules such as conf.lint need to see it.
#pragma once

#include <string>
#include <string_view>

#include "context/launch_context.h"
#include "probe/environment_entries.h"  // environment_from_entries, for environ and Slurm's job environment
#include "util/error.h"

namespace launchguard {

// Two formats, told apart by the last byte:
//  - KEY=VALUE lines (an env file): blank lines and lines starting with '#'
//    are skipped; a line without '=', with a name that is not
//    [A-Za-z_][A-Za-z0-9_]*, or holding a NUL byte is an error "origin:line: ...".
//    A name given twice keeps its last value, as a shell would.
//  - NUL-separated entries (/proc/PID/environ), which end with a NUL: taken as the kernel holds
//    them and read as getenv() reads them: an entry without '=' or without a name ("=x") is
//    skipped, because getenv() cannot return it, and the rest are kept; of a name given twice
//    the first counts, the one getenv() finds.
Result<Environment> parse_env_text(std::string_view text, std::string origin);

Result<Environment> read_env_file(const std::string& path);

// /proc/PID/environ under proc_root; needs the same uid as the process or root.
Result<Environment> read_process_environ(int pid, const std::string& proc_root = "/proc");

Environment current_process_environment();

}  // namespace launchguard
