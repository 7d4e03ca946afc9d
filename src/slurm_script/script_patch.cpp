#include "slurm_script/script_patch.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

#include "report/fix_script.h"
#include "report/text_report.h"
#include "util/text_escape.h"

namespace launchguard::slurm_script {
namespace {

std::string mount_entry(const RemediationOp& op) {
    return op.host_path + ":" + op.container_path + (op.readonly ? ":ro" : "");
}

std::string env_line(const RemediationOp& op) {
    return op.kind == RemediationOp::Kind::set_env ? "export " + op.name + "=" + shell_quote(op.value)
                                                   : "unset " + op.name;
}

std::string leading_blanks(const std::string& line) { return line.substr(0, line.find_first_not_of(" \t")); }

// Why `value` cannot be written into the script, "" when it can: quoting
// makes any other byte one shell word, but a NUL ends the file's text for
// the shell, a line break splits the comment --patched may write, and pyxis
// splits a mount at ',' (entries) and ':' (source, target, flags).
std::string unwritable(std::string_view value, bool in_mount) {
    if (value.find('\0') != std::string_view::npos) return "a NUL byte";
    if (value.find_first_of("\n\r") != std::string_view::npos) return "a line break";
    if (in_mount && value.find_first_of(",:") != std::string_view::npos)
        return "a ',' or ':' (pyxis splits mounts there)";
    return "";
}

Status check_writable(const BatchScript& script, const StepFixes& step, const RemediationOp& op) {
    std::string why;
    std::string what;
    if (op.kind == RemediationOp::Kind::mount_file) {
        what = "the mount " + printable_text(op.host_path) + " -> " + printable_text(op.container_path);
        why = unwritable(op.host_path, true);
        if (why.empty()) why = unwritable(op.container_path, true);
    } else {
        what = "the variable " + printable_text(op.name);
        if (!is_variable_name(op.name)) why = "a name that is no shell variable name";
        if (why.empty() && op.kind == RemediationOp::Kind::set_env) why = unwritable(op.value, false);
    }
    if (why.empty()) return Done{};
    return make_file_error(script.path, step.step_line,
                           "--patched cannot write the fix for " + what + " into the script: it holds " + why +
                               "; nothing was patched (`review` without --patched lists the fix)");
}

// Options to add to one srun: the mount entries and the --container-env
// names; to one MPI launcher: its own options for variables.
struct SrunAdditions {
    std::vector<std::string> mounts;
    std::vector<std::string> env_names;
    std::vector<std::string> launcher_options;

    // " '--container-mounts=a:b:ro,c:d' --container-env=X,Y": each option one shell word.
    [[nodiscard]] std::string words() const {
        std::string out;
        for (const auto& [option, items] :
             {std::pair{"--container-mounts=", &mounts}, {"--container-env=", &env_names}}) {
            if (items->empty()) continue;
            std::string joined;
            for (const auto& item : *items) joined += (joined.empty() ? "" : ",") + item;
            out += " " + shell_quote(std::string(option) + joined);
        }
        for (const auto& option : launcher_options) out += " " + option;
        return out;
    }
};

void add_once(std::vector<std::string>& list, const std::string& item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

// What the launcher of the step writes for `name` itself (`-x NAME=1`,
// `-genv NAME 1`), which an `unset` before its line cannot remove; "" when none.
std::string launcher_sets(const StepFixes& step, const std::string& name) {
    return step.mpi ? shell::rank_env_written(*step.mpi, name) : "";
}

// "the srun on line 58", "the mpirun on line 12", "the batch step".
std::string launch_word(const StepFixes& step) {
    if (step.step_line <= 0) return "the batch step";
    return "the " + (step.mpi && !step.srun ? step.mpi->launcher : std::string("srun")) + " on line " +
           std::to_string(step.step_line);
}

}  // namespace

bool script_can_apply(const RemediationOp& op, Runtime runtime) {
    switch (op.kind) {
        case RemediationOp::Kind::set_env:
        case RemediationOp::Kind::unset_env:
            return true;
        case RemediationOp::Kind::mount_file:
            return runtime == Runtime::pyxis;
        default:
            return false;
    }
}

std::string fix_in_script_terms(const RemediationOp& op, const StepFixes& step) {
    std::string where = step.step_line > 0 ? "line " + std::to_string(step.step_line) : "the batch step";
    switch (op.kind) {
        case RemediationOp::Kind::set_env:
            if (step.mpi) {
                return shell::rank_env_option(*step.mpi, op.name, shell_quote(op.value)) + "  (on the " +
                       step.mpi->launcher + " on " + where + ")";
            }
            if (step.runtime == Runtime::pyxis) {
                return env_line(op) + "  (before the srun on " + where + ", which gets --container-env=" + op.name +
                       " so the image's ENV cannot override it)";
            }
            return env_line(op) + "  (before the srun on " + where + ")";
        case RemediationOp::Kind::unset_env:
            if (auto written = launcher_sets(step, op.name); !written.empty()) {
                return "remove " + written + " from " + launch_word(step) +
                       " (it sets the variable for every rank; --patched leaves the launcher's options as written)";
            }
            return env_line(op) + "  (before " + launch_word(step) + ")";
        case RemediationOp::Kind::mount_file:
            if (step.runtime == Runtime::pyxis) {
                return "--container-mounts=" + mount_entry(op) + "  (on the srun on " + where + ")";
            }
            return "the step runs without a container: make " + op.host_path + " available at " + op.container_path +
                   " on the node";
        default:
            return describe_remediation(op);
    }
}

Result<std::string> apply_fixes(const BatchScript& script, const std::vector<StepFixes>& fixes) {
    // Line index -> lines to insert before it; (line index, column) -> options
    // to add to the srun word that ends there; line index -> options for a
    // srun whose word has no place of its own (a comment says to add them).
    std::map<std::size_t, std::vector<std::string>> before;
    std::map<std::pair<std::size_t, std::size_t>, SrunAdditions> on_srun;
    std::map<std::size_t, SrunAdditions> unplaced;
    for (const auto& step : fixes) {
        std::size_t index = step.step_line > 0
                                ? static_cast<std::size_t>(step.step_line - 1)
                                : static_cast<std::size_t>(std::max(script.last_directive_line, script.shebang_lines));
        auto additions = [&]() -> SrunAdditions& {
            if (step.options_line > 0) {
                return on_srun[{static_cast<std::size_t>(step.options_line - 1), step.options_column}];
            }
            return unplaced[index];
        };
        for (const auto& op : step.ops) {
            if (!script_can_apply(op, step.runtime)) continue;
            if (op.kind == RemediationOp::Kind::unset_env && !launcher_sets(step, op.name).empty()) continue;
            if (auto writable = check_writable(script, step, op); !writable) return writable.error();
            if (op.kind == RemediationOp::Kind::mount_file) {
                add_once(additions().mounts, mount_entry(op));
                continue;
            }
            if (op.kind == RemediationOp::Kind::set_env && step.mpi) {
                // The launcher's own option, at the end of its options.
                SrunAdditions& launcher =
                    step.mpi_options_line > 0
                        ? on_srun[{static_cast<std::size_t>(step.mpi_options_line - 1), step.mpi_options_column}]
                        : unplaced[index];
                add_once(launcher.launcher_options, shell::rank_env_option(*step.mpi, op.name, shell_quote(op.value)));
                continue;
            }
            add_once(before[index], env_line(op));
            if (op.kind == RemediationOp::Kind::set_env && step.runtime == Runtime::pyxis && step.step_line > 0) {
                add_once(additions().env_names, op.name);
            }
        }
    }
    std::string out;
    for (std::size_t i = 0; i <= script.lines.size(); ++i) {
        // Each line keeps its own ending; lines added before it take the same.
        std::string line = i < script.lines.size() ? script.lines[i] : std::string();
        bool crlf = i < script.lines.size() ? line.ends_with('\r') : script.crlf;
        if (line.ends_with('\r')) line.pop_back();
        const std::string ending = crlf ? "\r\n" : "\n";
        if (auto it = before.find(i); it != before.end()) {
            for (const auto& added : it->second) out += leading_blanks(line) + added + ending;
        }
        if (i == script.lines.size()) break;
        if (auto it = unplaced.find(i); it != unplaced.end()) {
            out += leading_blanks(line) + "# launchguard: add" + it->second.words() + " to the launch below" + ending;
        }
        // Right to left, so that each column still points where it did.
        for (auto it = on_srun.lower_bound({i + 1, 0}); it != on_srun.begin();) {
            --it;
            if (it->first.first != i) break;
            line.insert(std::min(it->first.second, line.size()), it->second.words());
        }
        // A last line without a line break stays without one, unless lines follow it.
        bool last = i + 1 == script.lines.size() && before.count(i + 1) == 0;
        out += line + (last && !script.final_newline ? std::string() : ending);
    }
    return out;
}

}  // namespace launchguard::slurm_script
