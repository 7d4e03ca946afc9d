// Shell commands read the way the shell would run them, without running
// anything: variables and their exports (`export`, `declare -x`, `export -n`,
// `declare +x`, `set -a`, `unset`, `readonly`, `local`), arrays, subshells
// whose changes are undone when they close, ${NAME:-default} and
// ${NAME:=default}, and the blocks (if/elif/else, case, loops, functions,
// `&&` and `||`) whose bodies run only when a condition holds. A test that
// the text decides (`[[ $NODES -gt 1 ]]` on a known NODES, `[ -n "$X" ]` on
// a known X) decides its branch; any other makes what the branch sets unknown,
// naming the line. A value that needs the running job ($(...), backquotes, a
// variable the script never sets, $1) is unknown with the construct that
// makes it so, never guessed.
//
// Constructs that may set any variable (`source FILE`, `. FILE`,
// `module load`, `eval`, `export $(...)`) are kept in `open_sources`, each
// with its line: after one, a variable the script does not set is unknown,
// not unset. One whose effect names only one variable (`NAME=$(cmd)`) makes
// only that variable unknown.
//
// Both spec front ends read shell through this one reader: a Slurm batch
// script (slurm_script/) and a container's command and args (kubernetes/).
// Each adds what its launcher means by subclassing Interpreter and taking
// the commands it runs in run_program (srun steps; mpirun and torchrun).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shell/lexer.h"

namespace launchguard::shell {

// Variables tracked: real scripts set dozens; a front end may copy the
// exported ones per command, so a script that sets tens of thousands must
// not multiply them.
inline constexpr std::size_t kMaxVariables = 1024;
// A value longer than this (A=$A$A doubles) is unknown rather than built.
inline constexpr std::size_t kMaxValueBytes = 64U << 10;
// Subshells inside each other whose own variables are kept apart, and the
// bytes of old values kept to restore when they close: past either, what a
// subshell sets stays set after it (with a note) rather than cost without bound.
inline constexpr std::size_t kMaxSubshellDepth = 64;
inline constexpr std::size_t kMaxSubshellSavedBytes = 16U << 20;
// `bash -c '...'` inside `bash -c '...'` is followed this deep, no deeper.
inline constexpr int kMaxNestedShells = 2;

// A word after expansion: its text, or unknown and why.
// A construct whose text only the running job knows ("$DATA", "$(hostname)"),
// and where it stands in the text around it.
struct RuntimePart {
    std::size_t position = 0;  // index into the known text, where the construct's text goes
    std::string written;       // the construct as written
};

struct Word {
    std::string text;
    bool known = true;
    std::string why_unknown;  // the construct that makes it unknown, as written
    // For an unknown word whose only unknowns are variables the shell never
    // sets itself (with Interpreter::keep_patterns): the text with those
    // references as ${NAME}, which a front end that knows the environment
    // the shell starts in can resolve (shell/expand.h).
    std::optional<std::string> pattern;
    // Where in `text` each run-time construct stands, with the construct as
    // written; empty for an unknown word that has no known shape at all.
    std::vector<RuntimePart> runtime_parts;
};

struct Variable {
    std::optional<std::string> value;    // nullopt: unknown
    std::optional<std::string> pattern;  // for an unknown value: see Word::pattern
    std::vector<Word> array;             // elements, each known or not
    bool array_known = true;             // false when the whole array is unknown (set under a condition)
    bool exported = false;
    int line = 0;
    std::string origin;       // "export on line 30"
    std::string why_unknown;  // "$(uname -m)", "set inside the if on line 12, ..."
};

using Variables = std::map<std::string, Variable, std::less<>>;

class Interpreter {
public:
    // `notes` collects what the reader could not follow, with line numbers;
    // `nesting` counts the `sh -c` scripts this one runs inside.
    Interpreter(std::vector<std::string>& notes, int nesting) : notes_(notes), nesting_(nesting) {}
    virtual ~Interpreter() = default;
    Interpreter(const Interpreter&) = delete;
    Interpreter& operator=(const Interpreter&) = delete;

    void run(const std::vector<RawCommand>& commands);

    // Expands one word. Unquoted expansions that come out empty vanish, as in the shell.
    std::vector<Word> expand(const RawWord& raw);
    // Sets NAME=value (or NAME+=value, or an array) as the shell would.
    void assign(const RawWord& raw, int line, bool export_it, const std::string& origin);
    // A variable the shell sets, known or not, and marked exported: for a
    // variable that comes from outside (a launcher's node count).
    void set_variable(const std::string& name, std::optional<std::string> value, const std::string& why, int line,
                      const std::string& origin, bool export_it);

    // The exported variables, as children see them now.
    [[nodiscard]] Variables exported_variables() const;
    // Follows the program that words[from...] start: the variables that
    // wrappers in front of it set (`env NCCL_DEBUG=INFO python`) and, for
    // `sh -c SCRIPT`, what the script exports or puts in front of its
    // commands go to command_environment; what in it may set any variable
    // goes to open_sources.
    void follow_program(const std::vector<Word>& words, std::size_t from, int line);
    // True while the command being read runs only when a condition holds.
    [[nodiscard]] bool conditional() const;
    [[nodiscard]] int nesting() const { return nesting_; }

    Variables variables;
    bool allexport = false;
    // Keep Word::pattern for references to variables the shell never sets
    // (the container's command: its environment is the pod's env list).
    bool keep_patterns = false;
    // Constructs read so far that may set any variable, in order:
    // "line 12: source /etc/profile.d/nccl.sh may set any variable".
    std::vector<std::string> open_sources;
    // Variables the shell puts in front of the programs it runs
    // (`NCCL_DEBUG=INFO python train.py`), as the last such command sets them.
    Variables command_environment;
    // Set by a front end to stop reading (a script over its limits).
    bool stopped = false;

protected:
    // A command that is no builtin the reader follows. By default the
    // assignments in front of it are kept in command_environment.
    virtual void run_program(const std::vector<const RawWord*>& prefixes, std::size_t first, const RawCommand& command);
    // A reader for a `sh -c` script that a program of this one runs.
    virtual std::unique_ptr<Interpreter> nested() { return std::make_unique<Interpreter>(notes_, nesting_ + 1); }
    // The words of command.words[first...] after expansion, with the raw
    // word each comes from.
    struct Expanded {
        std::vector<Word> words;
        std::vector<const RawWord*> sources;
    };
    Expanded expand_command(const RawCommand& command, std::size_t first);
    // NAME=value in front of a program: kept in command_environment.
    void record_prefixes(const std::vector<const RawWord*>& prefixes, int line);
    // The variable as NAME=value in front of a command sets it for that
    // command: the shell's own variables are unchanged.
    Variable prefix_variable(const RawWord& prefix, int line, const std::string& origin);
    void note(std::string text) { notes_.push_back(std::move(text)); }
    // "line 12: <construct> may set any variable", added to open_sources.
    void open_source(int line, const std::string& construct);

private:
    struct SubshellFrame {
        std::map<std::string, std::optional<Variable>, std::less<>> saved;
        bool allexport = false;
        std::size_t open_sources = 0;
        std::size_t blocks = 0;
    };
    // An if/case/loop/function/brace block: whether its current part runs.
    struct Block {
        enum class Kind { if_block, loop, case_block, brace, function };
        Kind kind = Kind::if_block;
        int line = 0;
        std::optional<bool> runs;       // true: certainly, false: certainly not, nullopt: only when a condition holds
        std::optional<bool> condition;  // the if/elif test just read, when decided
        bool taken = false;             // an earlier branch certainly ran
        bool maybe_taken = false;       // an earlier branch may have run
        bool awaiting_body = false;     // `f()` whose `{` comes on a later line
    };

    void run_command(const RawCommand& command);
    void enter_subshell(int line);
    void leave_subshell();
    void will_change(const std::string& name);
    std::vector<Word> expand_unguarded(std::string_view text);
    bool room_for(const std::string& name);
    void run_unset(const std::vector<RawWord>& args, int line);
    void run_declaration(const std::string& keyword, const std::vector<RawWord>& args, int line);
    void run_module(const std::vector<RawWord>& args, int line);
    // What `[[ ... ]]`, `[ ... ]`, `test ...` or `(( ... ))` from words[at]
    // decides; nullopt when it cannot be told.
    std::optional<bool> evaluate_test(const std::vector<RawWord>& words, std::size_t at);
    std::optional<bool> evaluate_arithmetic(std::string_view expression);
    [[nodiscard]] bool skipping() const;
    [[nodiscard]] std::string condition_reason() const;
    void open_block(Block::Kind kind, int line, std::optional<bool> runs);
    void close_block();

    template <typename Unknown>
    std::size_t expand_dollar(std::string_view text, std::size_t i, Word& word, Unknown&& unknown);
    template <typename Unknown>
    void append_variable(std::string_view name, std::string_view written, Word& word, Unknown&& unknown);
    template <typename Unknown>
    void expand_parameter(std::string_view inner, std::string_view written, Word& word, Unknown&& unknown);

    std::vector<std::string>& notes_;
    int nesting_;
    int expand_depth_ = 0;
    bool variables_dropped_ = false;
    std::vector<SubshellFrame> subshells_;
    std::size_t subshells_unsaved_ = 0;  // open past kMaxSubshellDepth
    bool subshells_too_deep_ = false;
    std::size_t subshell_saved_bytes_ = 0;
    bool subshell_budget_noted_ = false;
    std::vector<Block> blocks_;
    // Did the last command succeed, for `&&` and `||`: known only for a decided test.
    std::optional<bool> last_status_;
    // Pattern state of the word being expanded (keep_patterns).
    std::string pattern_;
    bool pattern_ok_ = true;
    bool pattern_used_ = false;
};

// Is `word` a shell (sh, bash, dash, zsh, ash, by any path)?
bool is_shell(std::string_view word);
// For `bash -c SCRIPT ...` starting at words[at]: the index of SCRIPT
// (`-c`, `-lc`, `-ec` and the like); nullopt when words[at] runs no -c script.
std::optional<std::size_t> shell_script_at(const std::vector<Word>& words, std::size_t at);

// Reads `script`, the -c text of a shell that a command runs on `line`, with
// `inner` (whose variables the caller has set up); its notes are prefixed
// with "bash -c: ". False, with a note, when it is nested too deep.
bool run_nested_script(Interpreter& inner, std::string_view script, int line, std::vector<std::string>& notes);

}  // namespace launchguard::shell
