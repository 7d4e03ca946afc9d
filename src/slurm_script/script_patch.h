// A launch's remediation in the batch script's own terms: `export` and
// `unset` lines before the srun they fix, a pyxis --container-mounts entry on
// that srun, and the script rewritten with them (`launchguard review --patched`).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "context/launch_context.h"
#include "finding/finding.h"
#include "slurm_script/batch_script.h"
#include "util/error.h"

namespace launchguard::slurm_script {

struct StepFixes {
    int step_line = 0;     // the srun line; 0 for the batch step of a script without srun
    int options_line = 0;  // where srun's options go (SrunStep::options_line); 0: no place
    std::size_t options_column = 0;
    Runtime runtime = Runtime::bare;
    std::vector<RemediationOp> ops;
    // The step's MPI launcher: a variable is set in its own syntax (`-x
    // NAME=value`, `-genv NAME value`) where its options go, since what it
    // passes its ranks beats what the script exports.
    std::optional<shell::MpiLaunch> mpi;
    bool srun = true;          // false: the MPI launcher runs without srun
    int mpi_options_line = 0;  // 0: no place (a comment says what to add)
    std::size_t mpi_options_column = 0;
};

// "export NCCL_TOPO_FILE=/opt/topo.xml  (before line 58)", "--container-mounts=/h:/c:ro  (on the srun of line 58)";
// operations a script cannot express (shm size, capabilities, manual steps) as their text.
std::string fix_in_script_terms(const RemediationOp& op, const StepFixes& step);

// Can the script itself carry this operation?
bool script_can_apply(const RemediationOp& op, Runtime runtime);

// The script with every operation it can carry applied; the rest is left to
// the report. Applying the result's fixes again changes nothing. Each
// inserted value is one shell word, single-quoted where it needs quoting;
// a value no line of the script can carry safely (a NUL, a line break, or in
// a mount a ',' or ':' that pyxis would split at) is an error, and nothing
// is written. Lines keep their own endings (LF or CR LF).
Result<std::string> apply_fixes(const BatchScript& script, const std::vector<StepFixes>& fixes);

}  // namespace launchguard::slurm_script
