// A Slurm batch script read as the spec of a launch, without running it: the
// #SBATCH directives, the variables it exports, and each srun step with its
// own options and environment. Only what the text states is known; anything
// computed when the job runs ($(...), backticks, variables the script does
// not set, assignments inside if/case/loops) stays unknown, never guessed.
//
// The reader is a small shell lexer, not a shell: it follows quoting,
// line continuations, heredocs (skipped), arrays (`declare -a A=(...)`,
// `A+=(...)`, `"${A[@]}"`) and `bash -c '...'` in a step, and gives up on a
// construct with a note instead of failing. Every loop advances through the
// input, and the input is bounded, so hostile text cannot make it hang.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace launchguard::slurm_script {

// sbatch itself refuses scripts above 4 MiB by default; a review needs far less.
inline constexpr std::size_t kMaxScriptBytes = 1U << 20;
// Steps kept for judging; a script that runs more (srun in a generated
// list) is judged on its first ones, with a note, so a review stays cheap.
inline constexpr std::size_t kMaxSteps = 64;

// One option as written (#SBATCH line or srun argument), split into name and value.
struct Option {
    std::string name;           // "--nodes", "-N"; a short option is kept short
    std::string value;          // "" for a flag
    bool has_value = false;
    bool value_known = true;    // false when the value is computed at run time
    int line = 0;
    std::string written;        // "--nodes=2", "-N 2"

    [[nodiscard]] bool is(std::string_view long_name, std::string_view short_name = {}) const;
};

// A variable the task will see, or one whose value is unknown.
struct Variable {
    std::string name;
    std::optional<std::string> value;  // nullopt: computed at run time
    int line = 0;
    std::string origin;                // "export on line 30", "srun --export on line 58"
    std::string why_unknown;           // "$(uname -m)", "set inside if/case/loop"
};

using VariableMap = std::map<std::string, Variable, std::less<>>;

struct SrunStep {
    int line = 0;                      // where the srun command starts
    int last_line = 0;                 // where it ends (continuations)
    std::vector<Option> options;       // srun's own options, in order
    VariableMap environment;           // what the step's tasks get from the script
    bool environment_complete = true;  // false after --export=NONE/explicit lists we cannot follow
    bool conditional = false;          // inside if/case/loop: runs only when a condition holds
    std::string program;               // first word after the options ("" when unknown)
};

struct BatchScript {
    std::string path;
    std::vector<Option> directives;    // #SBATCH, in order
    VariableMap exported;              // exported at the end of the script (for steps: see SrunStep)
    std::vector<SrunStep> steps;       // at most kMaxSteps
    std::size_t steps_dropped = 0;     // srun commands after the first kMaxSteps
    std::vector<std::string> notes;    // what the reader could not follow, with line numbers
    std::vector<std::string> lines;    // the script's physical lines, for `review --patched`
    int last_directive_line = 0;       // 0 when there is none
    int shebang_lines = 0;             // 1 when the first line is "#!..."
};

// Errors only for input that is not a batch script at all (too large,
// binary); everything else parses with notes.
Result<BatchScript> parse_batch_script(std::string_view text, const std::string& path);

// Does the text look like a batch script ("#!" first line or an #SBATCH line)?
bool looks_like_batch_script(std::string_view text);

}  // namespace launchguard::slurm_script
