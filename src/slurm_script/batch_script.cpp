#include "slurm_script/batch_script.h"

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>
#include <utility>

#include "shell/interpreter.h"
#include "shell/lexer.h"
#include "shell/wrappers.h"
#include "util/text.h"

namespace launchguard::slurm_script {
namespace {

using shell::RawCommand;
using shell::RawWord;
using shell::Word;

Variable to_variable(const std::string& name, const shell::Variable& variable) {
    return Variable{name, variable.value, variable.line, variable.origin, variable.why_unknown};
}

VariableMap to_variable_map(const shell::Variables& variables) {
    VariableMap out;
    for (const auto& [name, variable] : variables) out[name] = to_variable(name, variable);
    return out;
}

// A batch script read by the shared shell reader, with srun steps as the
// commands it follows further.
class ScriptShell : public shell::Interpreter {
public:
    ScriptShell(BatchScript& script, int nesting) : Interpreter(script.notes, nesting), script_(script) {}

    // What Slurm sets in the batch step from the #SBATCH lines, so that a
    // test on it (`[[ $SLURM_JOB_NUM_NODES -gt 1 ]]`) is decided. Not
    // exported by the script: steps get Slurm's own values anyway.
    void seed_from_directives();

    // Offsets where each physical line of the script starts (the top-level shell only).
    std::vector<std::size_t> line_starts;
    // Set when the script has more steps than a review judges: the reading stops.
    std::optional<std::pair<int, std::string>> refusal;

protected:
    void run_program(const std::vector<const RawWord*>& prefixes, std::size_t first,
                     const RawCommand& command) override;

private:
    // A launch command's words after expansion, from the launcher (srun or
    // mpirun) on: the line each comes from, and where in the text it ends
    // when it has a place of its own (a raw word that expands to it alone).
    struct LaunchWords {
        std::vector<Word> words;
        std::vector<int> lines;
        std::vector<std::optional<std::size_t>> ends;
        void drop_front(std::size_t count);
    };
    void run_srun(const std::vector<const RawWord*>& prefixes, const shell::Wrapped& start, LaunchWords launch,
                  std::optional<std::size_t> srun_end, const RawCommand& command,
                  std::optional<shell::MpiLaunch> outer_mpi = std::nullopt, std::size_t outer_mpi_place = 0);
    void run_mpi(const std::vector<const RawWord*>& prefixes, const shell::Wrapped& start, LaunchWords launch,
                 const RawCommand& command);
    SrunStep new_step(const std::vector<const RawWord*>& prefixes, const shell::Wrapped& start,
                      const RawCommand& command);
    void read_step_program(SrunStep& step, const std::vector<Word>& words, std::size_t program,
                           const RawCommand& command);
    void apply_wrapper_edits(SrunStep& step, const std::vector<shell::EnvEdit>& edits, int line);
    void apply_mpi_edits(SrunStep& step, const shell::MpiLaunch& mpi, int line);
    // The step's MPI launcher, and where its options may be added (an offset in the text).
    void set_mpi(SrunStep& step, shell::MpiLaunch mpi, std::size_t place, int line);
    // The physical line (1-based) and column of an offset in the script's text; {0, 0} for offset 0 (none).
    [[nodiscard]] std::pair<int, std::size_t> place_of(std::size_t offset) const;
    bool within_step_bounds(const SrunStep& step);
    // False, and the script refused, when it already has kMaxSteps steps.
    bool room_for_step(int line);
    // False, and the script refused, when `more` bytes of a step's words
    // would take the steps past kMaxStepBytes.
    bool charge_step_bytes(std::size_t more, int line) {
        if (step_bytes_ + more <= kMaxStepBytes) return true;
        refusal.emplace(line, "the options and environments of the script's srun steps together are larger than " +
                                  std::to_string(kMaxStepBytes) +
                                  " bytes, the most launchguard judges; the script is refused rather than judged "
                                  "in part");
        stopped = true;
        return false;
    }

    BatchScript& script_;
    std::size_t step_bytes_ = 0;  // options and environments of the steps so far
};

// srun or an MPI launcher itself, or a wrapper that may run one.
bool starts_step(std::string_view name) {
    return name == "srun" || shell::is_mpi_launcher(name) || shell::is_wrapper(name);
}

bool is_srun(const Word& word) { return word.known && shell::base_name(word.text) == "srun"; }
bool is_mpi(const Word& word) { return word.known && shell::is_mpi_launcher(word.text); }

void ScriptShell::LaunchWords::drop_front(std::size_t count) {
    count = std::min(count, words.size());
    auto at = [count](auto& list) { list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(count)); };
    at(words);
    at(lines);
    at(ends);
}

// A command that is no builtin the reader follows: a step when it runs
// srun, directly or through wrappers.
void ScriptShell::run_program(const std::vector<const RawWord*>& prefixes, std::size_t first,
                              const RawCommand& command) {
    // Only srun and its wrappers are read further (and expanded, with
    // the side effects of ${X:=default} that expansion has).
    auto head = expand(command.words[first]);
    if (head.empty() || !head.front().known || !starts_step(shell::base_name(head.front().text))) return;
    std::vector<Word> words;
    std::vector<const RawWord*> sources;  // the raw word each expanded word comes from
    std::vector<bool> alone;              // the raw word expanded to this word only
    std::size_t bytes = 0;
    for (std::size_t i = first; i < command.words.size(); ++i) {
        auto expanded = i == first ? std::move(head) : expand(command.words[i]);
        for (auto& word : expanded) {
            if (words.size() >= shell::kMaxWords) break;
            bytes += word.text.size();
            if (!charge_step_bytes(bytes, command.line)) return;
            words.push_back(std::move(word));
            sources.push_back(&command.words[i]);
            alone.push_back(expanded.size() == 1);
        }
    }
    auto start = shell::skip_wrappers(words);
    if (!start || start->program >= words.size() ||
        !(is_srun(words[start->program]) || is_mpi(words[start->program]))) {
        return;
    }
    LaunchWords launch;
    for (std::size_t i = 0; i < words.size(); ++i) {
        launch.lines.push_back(sources[i]->line);
        launch.ends.push_back(alone[i] && sources[i]->complete ? std::optional<std::size_t>(sources[i]->end)
                                                               : std::nullopt);
    }
    launch.words = std::move(words);
    std::size_t launcher = start->program;
    launch.drop_front(launcher);
    step_bytes_ += bytes;
    if (is_mpi(launch.words.front())) {
        run_mpi(prefixes, *start, std::move(launch), command);
        return;
    }
    std::optional<std::size_t> srun_end = launch.ends.front();
    launch.drop_front(1);
    run_srun(prefixes, *start, std::move(launch), srun_end, command);
}

std::pair<int, std::size_t> ScriptShell::place_of(std::size_t offset) const {
    if (line_starts.empty() || offset == 0) return {0, 0};
    auto next = std::upper_bound(line_starts.begin(), line_starts.end(), offset - 1);
    std::size_t index = static_cast<std::size_t>(next - line_starts.begin()) - 1;
    const std::size_t column = offset - line_starts[index];
    // Words added here must stand on their own; elsewhere there is no place.
    if (index >= script_.lines.size() || !shell::word_may_be_added_at(script_.lines[index], column)) return {0, 0};
    return {static_cast<int>(index) + 1, column};
}

void ScriptShell::seed_from_directives() {
    for (const auto& option : script_.directives) {
        if (!option.value_known || !option.has_value) continue;
        std::vector<std::string> names;
        if (option.is("--nodes", "-N")) names = {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"};
        if (option.is("--ntasks", "-n")) names = {"SLURM_NTASKS", "SLURM_NPROCS"};
        if (names.empty()) continue;
        std::string value = option.value;
        // "2-2" is 2 nodes; a range that may give fewer is not one number.
        if (auto dash = value.find('-'); dash != std::string::npos) {
            if (value.substr(0, dash) != value.substr(dash + 1)) continue;
            value = value.substr(0, dash);
        }
        if (value.empty() || !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            continue;
        }
        for (const auto& name : names) {
            set_variable(name, value, "", option.line,
                         "#SBATCH " + option.written + " on line " + std::to_string(option.line), false);
        }
    }
}

// srun and sbatch options whose value may follow as the next word; the rest
// are flags or take a value only as --name=value (--exclusive, --nice).
// pyxis adds the --container-* ones.
constexpr std::array kValueOptions = {"--nodes",
                                      "--ntasks",
                                      "--ntasks-per-node",
                                      "--gpus-per-node",
                                      "--gpus",
                                      "--gres",
                                      "--cpu-bind",
                                      "--gpu-bind",
                                      "--gpus-per-task",
                                      "--export",
                                      "--container-image",
                                      "--container-mounts",
                                      "--container-workdir",
                                      "--container-env",
                                      "--container-name",
                                      "--job-name",
                                      "--output",
                                      "--error",
                                      "--partition",
                                      "--time",
                                      "--account",
                                      "--mpi",
                                      "--cpus-per-task",
                                      "--cpus-per-gpu",
                                      "--mem",
                                      "--mem-per-gpu",
                                      "--mem-per-cpu",
                                      "--ntasks-per-core",
                                      "--ntasks-per-socket",
                                      "--ntasks-per-gpu",
                                      "--constraint",
                                      "--qos",
                                      "--nodelist",
                                      "--exclude",
                                      "--chdir",
                                      "--distribution",
                                      "--reservation",
                                      "--dependency",
                                      "--array",
                                      "--mail-type",
                                      "--mail-user",
                                      "--signal",
                                      "--wait-all-nodes",
                                      "--cpu-freq",
                                      "--gpu-freq",
                                      "--network",
                                      "--input",
                                      "--open-mode",
                                      "--begin",
                                      "--comment",
                                      "--threads-per-core",
                                      "--sockets-per-node",
                                      "--cores-per-socket",
                                      "--hint",
                                      "--switches",
                                      "--container-save",
                                      "--export-file",
                                      "--gres-flags",
                                      "--tres-per-task"};
constexpr std::string_view kValueShortOptions = "NnGcoepitAJCwxDqdmrS";

bool takes_value(std::string_view name) {
    if (name.size() == 2 && name[0] == '-' && name[1] != '-')
        return kValueShortOptions.find(name[1]) != std::string_view::npos;
    return std::find(kValueOptions.begin(), kValueOptions.end(), name) != kValueOptions.end();
}

// The run-time parts of the value that starts at `offset` of an option
// word; none (a value of unknown shape) when one stands in the option's name.
std::vector<RuntimePart> value_parts(const Word& word, std::size_t offset) {
    std::vector<RuntimePart> parts;
    for (const auto& part : word.runtime_parts) {
        if (part.position < offset) return {};
        parts.push_back({part.position - offset, part.written});
    }
    return parts;
}

// Splits option words ("--nodes=2", "-N", "2", "-N2") into options; stops at
// the first word that is no option. Returns the index of that word.
std::size_t read_options(const std::vector<Word>& words, const std::vector<int>& lines, std::vector<Option>& out) {
    std::size_t i = 0;
    while (i < words.size()) {
        const Word& word = words[i];
        const std::string& w = word.text;
        if (!word.known && w.empty()) {
            ++i;  // an expansion we cannot see ("${ARGS[@]}" of unknown content) — skipped
            continue;
        }
        if (w == "--") return i + 1;
        if (w.size() < 2 || w[0] != '-') return i;
        Option option;
        option.line = lines[i];
        option.written = w;
        option.value_known = word.known;
        if (w.starts_with("--")) {
            std::size_t eq = w.find('=');
            option.name = w.substr(0, eq);
            if (eq != std::string::npos) {
                option.value = w.substr(eq + 1);
                option.has_value = true;
                option.value_runtime_parts = value_parts(word, eq + 1);
            }
        } else {
            option.name = w.substr(0, 2);
            if (w.size() > 2 && takes_value(option.name)) {
                option.value = w.substr(2);
                option.has_value = true;
            }
        }
        ++i;
        if (!option.has_value && takes_value(option.name) && i < words.size()) {
            option.value = words[i].text;
            option.value_known = words[i].known;
            option.value_runtime_parts = words[i].runtime_parts;
            option.has_value = true;
            option.written += " " + (words[i].known ? words[i].text : words[i].why_unknown);
            ++i;
        }
        out.push_back(std::move(option));
    }
    return i;
}

void ScriptShell::apply_wrapper_edits(SrunStep& step, const std::vector<shell::EnvEdit>& edits, int line) {
    for (const auto& edit : edits) {
        switch (edit.kind) {
            case shell::EnvEdit::Kind::clear:
                step.environment.clear();
                break;
            case shell::EnvEdit::Kind::unset:
                step.environment.erase(edit.name);
                break;
            case shell::EnvEdit::Kind::set:
                step.environment[edit.name] =
                    Variable{edit.name, edit.value.known ? std::optional<std::string>(edit.value.text) : std::nullopt,
                             line, edit.wrapper + " on line " + std::to_string(line), edit.value.why_unknown};
                break;
            case shell::EnvEdit::Kind::unknown:
                step.environment_complete = false;
                step.environment_why_unknown =
                    "the srun on line " + std::to_string(line) + " runs under " + edit.wrapper;
                script_.notes.push_back("line " + std::to_string(line) + ": srun runs under " + edit.wrapper +
                                        "; the step's environment is not known");
                break;
        }
    }
}

// Steps whose options and environments together pass kMaxStepBytes refuse
// the script, as more than kMaxSteps steps do: a review judges every step or none.
bool ScriptShell::within_step_bounds(const SrunStep& step) {
    std::size_t bytes = 0;
    for (const auto& [name, variable] : step.environment) {
        bytes += name.size() + (variable.value ? variable.value->size() : 0);
    }
    for (const auto& word : step.command) bytes += word.size();
    if (!charge_step_bytes(bytes, step.line)) return false;
    step_bytes_ += bytes;
    return true;
}

// A step as the shell starts it: the exported variables, the command's
// NAME=value prefixes and what the wrappers in front of the launcher do.
SrunStep ScriptShell::new_step(const std::vector<const RawWord*>& prefixes, const shell::Wrapped& start,
                               const RawCommand& command) {
    SrunStep step;
    step.line = command.line;
    step.last_line = command.last_line;
    step.conditional = conditional();
    step.environment = to_variable_map(exported_variables());
    step.open_sources = open_sources;
    for (const RawWord* prefix : prefixes) {
        std::string name = prefix->raw.substr(0, prefix->raw.find('='));
        if (name.ends_with('+')) name.pop_back();
        shell::Variable v =
            prefix_variable(*prefix, command.line, "srun prefix on line " + std::to_string(command.line));
        step.environment[name] = Variable{name, v.value, command.line, v.origin, v.why_unknown};
    }
    apply_wrapper_edits(step, start.edits, command.line);
    return step;
}

void ScriptShell::set_mpi(SrunStep& step, shell::MpiLaunch mpi, std::size_t place, int line) {
    std::tie(step.mpi_options_line, step.mpi_options_column) = place_of(mpi.complete ? place : 0);
    apply_mpi_edits(step, mpi, line);
    step.mpi = std::move(mpi);
}

// What the launcher passes its ranks. Hydra's -genvnone keeps only what it
// names, wherever it stands among the options.
void ScriptShell::apply_mpi_edits(SrunStep& step, const shell::MpiLaunch& mpi, int line) {
    const VariableMap launcher = step.environment;
    bool clear = std::any_of(mpi.edits.begin(), mpi.edits.end(),
                             [](const shell::RankEnvEdit& e) { return e.kind == shell::RankEnvEdit::Kind::clear; });
    if (clear) step.environment.clear();
    for (const auto& edit : mpi.edits) {
        std::string origin = mpi.launcher + " " + edit.written + " on line " + std::to_string(line);
        switch (edit.kind) {
            case shell::RankEnvEdit::Kind::set:
                step.environment[edit.name] =
                    Variable{edit.name, edit.value.known ? std::optional<std::string>(edit.value.text) : std::nullopt,
                             line, origin, edit.value.why_unknown};
                break;
            case shell::RankEnvEdit::Kind::forward:
                if (auto it = launcher.find(edit.name); it != launcher.end()) {
                    step.environment[edit.name] = it->second;
                } else if (variables.count(edit.name) != 0) {
                    script_.notes.push_back("line " + std::to_string(line) + ": " + mpi.launcher + " " + edit.written +
                                            " passes nothing: the script sets " + edit.name +
                                            " without exporting it, so the launcher does not see it");
                }
                break;
            case shell::RankEnvEdit::Kind::unset:
                step.environment.erase(edit.name);
                break;
            case shell::RankEnvEdit::Kind::clear:
                break;
        }
    }
}

// mpirun (mpiexec, ...) run from the batch step: one launch of its program,
// or of the srun it starts.
void ScriptShell::run_mpi(const std::vector<const RawWord*>& prefixes, const shell::Wrapped& start, LaunchWords launch,
                          const RawCommand& command) {
    auto mpi = shell::read_mpi_launcher(launch.words, 0);
    if (!mpi) return;
    std::size_t program = mpi->program;
    // options_end > 0: the launcher comes first.
    std::size_t place = launch.ends[mpi->options_end - 1].value_or(0);
    if (program < launch.words.size() && is_srun(launch.words[program])) {
        std::optional<std::size_t> srun_end = launch.ends[program];
        launch.drop_front(program + 1);
        run_srun(prefixes, start, std::move(launch), srun_end, command, std::move(*mpi), place);
        return;
    }
    if (!room_for_step(command.line)) return;
    SrunStep step = new_step(prefixes, start, command);
    step.srun = false;
    set_mpi(step, std::move(*mpi), place, command.line);
    for (std::size_t i = program; i < launch.words.size(); ++i) {
        if (launch.words[i].known) step.command.push_back(launch.words[i].text);
    }
    if (program < launch.words.size()) {
        step.program = launch.words[program].known ? launch.words[program].text : "";
        read_step_program(step, launch.words, program, command);
    }
    if (within_step_bounds(step)) script_.steps.push_back(std::move(step));
}

bool ScriptShell::room_for_step(int line) {
    if (script_.steps.size() < kMaxSteps) return true;
    refusal.emplace(line, "the script runs more than " + std::to_string(kMaxSteps) +
                              " srun steps; launchguard judges up to " + std::to_string(kMaxSteps) +
                              " and refuses a script with more rather than judge part of it");
    stopped = true;
    return false;
}

void ScriptShell::run_srun(const std::vector<const RawWord*>& prefixes, const shell::Wrapped& start, LaunchWords launch,
                           std::optional<std::size_t> srun_end, const RawCommand& command,
                           std::optional<shell::MpiLaunch> outer_mpi, std::size_t outer_mpi_place) {
    if (!room_for_step(command.line)) return;
    SrunStep step = new_step(prefixes, start, command);
    std::tie(step.options_line, step.options_column) = place_of(srun_end.value_or(0));
    // `mpirun ... srun prog`: what mpirun passes reaches srun, whose --export then applies.
    if (outer_mpi) set_mpi(step, std::move(*outer_mpi), outer_mpi_place, command.line);
    const std::vector<Word>& words = launch.words;

    std::size_t program = read_options(words, launch.lines, step.options);
    if (!outer_mpi && program < words.size() && is_mpi(words[program])) {
        // `srun ... mpirun ... prog`: one launch, of mpirun's program.
        auto mpi = shell::read_mpi_launcher(words, program);
        std::size_t inner = mpi->program;
        std::size_t place = launch.ends[mpi->options_end - 1].value_or(0);
        set_mpi(step, std::move(*mpi), place, command.line);
        program = inner;
    }
    if (program < words.size()) step.program = words[program].known ? words[program].text : "";
    for (std::size_t i = program; i < words.size(); ++i) {
        if (words[i].known) step.command.push_back(words[i].text);
    }

    for (const auto& option : step.options) {
        if (!option.is("--export")) continue;
        if (!option.value_known) {
            step.environment_complete = false;
            step.environment_why_unknown = "srun " + option.written + " is computed at run time";
            script_.notes.push_back("line " + std::to_string(option.line) + ": srun " + option.written +
                                    " is computed at run time; the step's environment is not fully known");
            continue;
        }
        auto entries = split_list(option.value, ',');
        bool all = std::find(entries.begin(), entries.end(), "ALL") != entries.end();
        if (!all) step.environment.clear();
        if (std::find(entries.begin(), entries.end(), "NONE") != entries.end()) continue;
        for (const auto& entry : entries) {
            if (entry == "ALL") continue;
            std::size_t eq = entry.find('=');
            std::string origin = "srun --export on line " + std::to_string(option.line);
            if (eq != std::string::npos) {
                std::string name = entry.substr(0, eq);
                step.environment[name] = Variable{name, entry.substr(eq + 1), option.line, origin, ""};
            } else if (auto it = variables.find(entry); it != variables.end()) {
                step.environment[entry] =
                    Variable{entry, it->second.value, option.line, origin, it->second.why_unknown};
            } else {
                step.environment[entry] =
                    Variable{entry, std::nullopt, option.line, origin, "from the submitting shell"};
            }
        }
    }

    if (program < words.size()) read_step_program(step, words, program, command);
    if (within_step_bounds(step)) script_.steps.push_back(std::move(step));
}

// The program srun runs, read like the manifest reader reads a container's
// command: wrappers in front of it (`env NCCL_DEBUG=INFO python`) and a
// `bash -c '...'` script, whose exports and `NAME=value cmd` prefixes reach
// the job's processes, and whose `source` may set any variable.
void ScriptShell::read_step_program(SrunStep& step, const std::vector<Word>& words, std::size_t program,
                                    const RawCommand& command) {
    auto wrapped = shell::skip_wrappers(words, program);
    if (!wrapped) return;
    apply_wrapper_edits(step, wrapped->edits, command.line);
    if (wrapped->program < words.size() && words[wrapped->program].known &&
        shell::is_plain_utility(words[wrapped->program].text)) {
        step.utility = std::string(shell::base_name(words[wrapped->program].text));
    }
    auto script_at = shell::shell_script_at(words, wrapped->program);
    if (!script_at) return;
    if (words[*script_at].known && shell::runs_only_utilities(words[*script_at].text)) {
        step.utility = std::string(shell::base_name(words[wrapped->program].text)) + " -c with only such commands";
    }
    std::vector<std::string> inner_notes;
    shell::Interpreter inner(inner_notes, nesting() + 1);
    inner.variables = variables;
    inner.follow_program(words, wrapped->program, command.line);
    std::string origin = "bash -c in the srun on line " + std::to_string(command.line);
    for (const auto& [name, variable] : inner.command_environment) {
        step.environment[name] = Variable{name, variable.value, command.line, origin, variable.why_unknown};
    }
    for (const auto& source : inner.open_sources) step.open_sources.push_back(origin + ", " + source);
    for (auto& inner_note : inner_notes) script_.notes.push_back(std::move(inner_note));
}

// #SBATCH lines: sbatch reads them only until the first command.
void read_directives(BatchScript& script, std::vector<std::string>& notes) {
    for (std::size_t i = 0; i < script.lines.size(); ++i) {
        std::string_view line = script.lines[i];
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        int number = static_cast<int>(i) + 1;
        if (line.starts_with("#SBATCH")) {
            std::string_view rest = line.substr(7);
            if (!rest.empty() && rest.front() != ' ' && rest.front() != '\t') continue;  // "#SBATCHX"
            auto commands = shell::lex(rest, number, notes);
            std::vector<Word> words;
            std::vector<int> lines;
            for (const auto& command : commands) {
                for (const auto& raw : command.words) {
                    // Directives are not shell: quotes are removed, nothing is expanded.
                    std::string text;
                    for (char c : raw.raw) {
                        if (c != '"' && c != '\'') text += c;
                    }
                    words.push_back(Word{text, true, {}, std::nullopt, {}});
                    lines.push_back(number);
                }
            }
            std::vector<Option> options;
            read_options(words, lines, options);
            for (auto& option : options) script.directives.push_back(std::move(option));
            script.last_directive_line = number;
            continue;
        }
        std::string_view trimmed = line;
        while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) trimmed.remove_prefix(1);
        if (trimmed.empty() || trimmed.front() == '#') continue;
        break;
    }
}

}  // namespace

bool Option::is(std::string_view long_name, std::string_view short_name) const {
    return name == long_name || (!short_name.empty() && name == short_name);
}

bool looks_like_batch_script(std::string_view text) {
    if (text.starts_with("#!")) return true;
    for (std::size_t pos = 0; pos < text.size() && pos < kMaxScriptBytes;) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        if (text.substr(pos, end - pos).starts_with("#SBATCH")) return true;
        pos = end + 1;
    }
    return false;
}

Result<BatchScript> parse_batch_script(std::string_view text, const std::string& path) {
    if (text.size() > kMaxScriptBytes) {
        return make_file_error(path, 0,
                               "the script is " + std::to_string(text.size()) +
                                   " bytes; launchguard reads "
                                   "batch scripts up to " +
                                   std::to_string(kMaxScriptBytes) + " bytes");
    }
    if (auto nul = text.find('\0'); nul != std::string_view::npos) {
        int line =
            1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
        return make_file_error(path, line, "a NUL byte: this is not a shell script");
    }
    BatchScript script;
    script.path = path;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) {
            if (pos < text.size()) script.lines.emplace_back(text.substr(pos));
            break;
        }
        script.lines.emplace_back(text.substr(pos, end - pos));
        pos = end + 1;
    }
    script.shebang_lines = text.starts_with("#!") ? 1 : 0;
    script.final_newline = text.empty() || text.ends_with('\n');
    for (std::size_t i = 0; i < script.lines.size(); ++i) {
        // The last line has no line break of its own: a CR there is no DOS line break.
        if (script.lines[i].ends_with('\r') && (i + 1 < script.lines.size() || text.ends_with('\n'))) {
            script.crlf = true;
            script.notes.push_back("line " + std::to_string(i + 1) +
                                   " ends with CR LF (DOS line breaks): sbatch refuses a script with them; "
                                   "convert it to LF line breaks (dos2unix) before submitting");
            break;
        }
    }
    read_directives(script, script.notes);

    ScriptShell shell(script, 0);
    shell.seed_from_directives();
    std::size_t offset = 0;
    for (const auto& line : script.lines) {
        shell.line_starts.push_back(offset);
        offset += line.size() + 1;
    }
    shell.run(shell::lex(text, 1, script.notes));
    if (shell.refusal) return make_file_error(path, shell.refusal->first, shell.refusal->second);
    script.exported = to_variable_map(shell.exported_variables());
    script.open_sources = shell.open_sources;
    return script;
}

}  // namespace launchguard::slurm_script
