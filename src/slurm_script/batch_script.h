// A Slurm batch script read as the spec of a launch, without running it: the
// #SBATCH directives, the variables it exports, and each srun step with its
// own options and environment. Only what the text states is known; anything
// computed when the job runs ($(...), backticks, variables the script does
// not set, assignments inside if/case/loops whose condition the script does
// not decide) stays unknown, never guessed, and `source`/`module load` may
// set any variable (SrunStep::open_sources).
//
// The shell is read by the shared reader (shell/interpreter.h), which the
// manifest reader uses too; this file adds what Slurm means: #SBATCH
// directives, srun steps behind their wrappers, srun's options and --export,
// and the program each step runs (`bash -c '...'`, `env X=1 prog`). A
// construct it cannot follow gives a note instead of a failure; the input
// is bounded, so hostile text cannot make it hang.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shell/interpreter.h"
#include "shell/mpi_launcher.h"
#include "util/error.h"

namespace launchguard::slurm_script {

// sbatch itself refuses scripts above 4 MiB by default; a review needs far less.
inline constexpr std::size_t kMaxScriptBytes = 1U << 20;
// Steps judged per script: every step up to this many is judged (the cost
// grows linearly with them); a script with more is refused, never judged in
// part, so a step that was not judged can never be allowed.
inline constexpr std::size_t kMaxSteps = 4096;
// The options, environments and commands of all steps together (names and values, in
// bytes): each step carries its own copy of both, so this bounds what many
// steps over large variables can cost. A script above it is refused like one
// with too many steps.
inline constexpr std::size_t kMaxStepBytes = 64U << 20;

using shell::RuntimePart;

// One option as written (#SBATCH line or srun argument), split into name and value.
struct Option {
    std::string name;   // "--nodes", "-N"; a short option is kept short
    std::string value;  // "" for a flag
    bool has_value = false;
    bool value_known = true;  // false when the value is computed at run time
    // When value_known is false: the run-time parts, `value` holding the
    // literal text around them ("/a:/a,$D:$D" is "/a:/a,:" with "$D" at 6
    // and 7); empty when nothing of the value's shape is known.
    std::vector<RuntimePart> value_runtime_parts;
    int line = 0;
    std::string written;  // "--nodes=2", "-N 2"

    [[nodiscard]] bool is(std::string_view long_name, std::string_view short_name = {}) const;
};

// A variable the task will see, or one whose value is unknown.
struct Variable {
    std::string name;
    std::optional<std::string> value;  // nullopt: computed at run time
    int line = 0;
    std::string origin;       // "export on line 30", "srun --export on line 58"
    std::string why_unknown;  // "$(uname -m)", "set inside if/case/loop"
};

using VariableMap = std::map<std::string, Variable, std::less<>>;

// A launch step: an srun, an MPI launcher (mpirun, mpiexec) run from the
// batch step, or one inside the other (`srun mpirun ...`, `mpirun srun ...`),
// which is one launch.
struct SrunStep {
    int line = 0;                         // where the srun (or launcher) command starts
    int last_line = 0;                    // where it ends (continuations)
    std::vector<Option> options;          // srun's own options, in order
    VariableMap environment;              // what the step's tasks get from the script
    bool environment_complete = true;     // false when the step's environment cannot be known
    std::string environment_why_unknown;  // why, when it is not complete
    bool conditional = false;             // inside if/case/loop: runs only when a condition holds
    // Constructs read before the step that may set any variable ("line 12:
    // source /etc/profile.d/nccl.sh may set any variable"): a variable absent
    // from `environment` is then unknown, not unset.
    std::vector<std::string> open_sources;
    // The MPI launcher of the step, with what it passes its ranks and the
    // shape its options state; nullopt for a step srun starts alone.
    std::optional<shell::MpiLaunch> mpi;
    bool srun = true;  // false for an MPI launcher the batch step runs without srun
    // Where the launcher's own options may be added (`-x NAME=value`): just
    // before its program; line 0 when that place comes out of an expansion.
    int mpi_options_line = 0;
    std::size_t mpi_options_column = 0;
    // The program after srun's options, the launcher's and the wrappers', when
    // it is a shell builtin or a coreutils-style command that runs no
    // collective library (rm, mkdir, echo, nvidia-smi); "" otherwise.
    std::string utility;
    std::string program;               // first word after the options ("" when unknown)
    std::vector<std::string> command;  // the program and its arguments, those known before the job runs
    // Where srun's own options may be added: the physical line (1-based) and
    // the byte column just after the srun word; line 0 when the srun word
    // comes out of an expansion with other words, or ends inside a quote that
    // is never closed, and has no place of its own.
    int options_line = 0;
    std::size_t options_column = 0;
};

struct BatchScript {
    std::string path;
    std::vector<Option> directives;         // #SBATCH, in order
    VariableMap exported;                   // exported at the end of the script (for steps: see SrunStep)
    std::vector<std::string> open_sources;  // as SrunStep::open_sources, at the end of the script
    std::vector<SrunStep> steps;            // at most kMaxSteps (more is an error)
    std::vector<std::string> notes;         // what the reader could not follow, with line numbers
    std::vector<std::string> lines;         // the script's physical lines, for `review --patched`
    int last_directive_line = 0;            // 0 when there is none
    int shebang_lines = 0;                  // 1 when the first line is "#!..."
    bool final_newline = true;              // false when the last line has no line break
    bool crlf = false;                      // a line ends with CR LF (DOS line breaks), with a note
};

// Errors for input that is not a batch script at all (too large, binary) and
// for one with more steps than a review judges (kMaxSteps,
// kMaxStepBytes); everything else parses with notes.
Result<BatchScript> parse_batch_script(std::string_view text, const std::string& path);

// Does the text look like a batch script ("#!" first line or an #SBATCH line)?
bool looks_like_batch_script(std::string_view text);

}  // namespace launchguard::slurm_script
