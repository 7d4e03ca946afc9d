#include "slurm_script/batch_script.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>
#include <optional>
#include <utility>

#include "util/text.h"

namespace launchguard::slurm_script {
namespace {

// `bash -c '...'` inside `bash -c '...'` is followed this deep, no deeper.
constexpr int kMaxNestedShells = 2;
// Array elements kept per array, words kept per command: far above any real
// script, low enough that a hostile one cannot blow up the expansion.
constexpr std::size_t kMaxWords = 4096;
// Quotes and $(...) inside each other, and ${a:-${b:-...}} defaults, are
// followed this deep; deeper text is kept as written and counts as unknown.
constexpr int kMaxNesting = 64;
// Variables tracked: real scripts set dozens; each step copies the exported
// ones, so a script that sets tens of thousands must not multiply them.
constexpr std::size_t kMaxVariables = 1024;
// A value longer than this (A=$A$A doubles) is unknown rather than built.
constexpr std::size_t kMaxValueBytes = 64U << 10;
// Subshells inside each other whose own variables are kept apart, and the
// bytes of old values kept to restore when they close: past either, what a
// subshell sets stays set after it (with a note) rather than cost without bound.
constexpr std::size_t kMaxSubshellDepth = 64;
constexpr std::size_t kMaxSubshellSavedBytes = 16U << 20;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

bool is_name(std::string_view text) {
    return !text.empty() && is_name_start(text.front()) && std::all_of(text.begin(), text.end(), is_name_char);
}

// ---------------------------------------------------------------- lexing

// A word as written (quotes kept), or an array assignment NAME=( ... ).
struct RawWord {
    std::string raw;
    int line = 0;
    bool is_array = false;          // raw holds "NAME=" or "NAME+="
    std::vector<RawWord> elements;  // the array's words
    std::size_t end = 0;            // offset just after the word in the text it was read from
    bool complete = true;           // false when a quote or $( in it is never closed
};

struct RawCommand {
    // A subshell's '(' and ')' come as commands of their own, so that what
    // is set between them can be dropped when it closes.
    enum class Kind { simple, subshell_open, subshell_close };
    Kind kind = Kind::simple;
    std::vector<RawWord> words;
    int line = 0;
    int last_line = 0;
};

class Lexer {
public:
    Lexer(std::string_view text, int first_line, std::vector<std::string>& notes)
        : text_(text), line_(first_line), notes_(notes) {}

    std::vector<RawCommand> commands() {
        std::vector<RawCommand> out;
        RawCommand current;
        auto finish = [&] {
            if (!current.words.empty()) out.push_back(std::move(current));
            current = RawCommand{};
        };
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == ' ' || c == '\t' || c == '\r') {
                ++pos_;
            } else if (c == '\\' && peek(1) == '\n') {
                pos_ += 2;
                ++line_;
            } else if (c == '#') {
                skip_comment();
            } else if (c == '\n') {
                ++pos_;
                ++line_;
                finish();
                skip_heredocs();
            } else if (c == ';' || c == '&' || c == '|') {
                ++pos_;
                finish();
            } else if (c == '(') {
                ++pos_;
                finish();
                scopes_.push_back(Scope::subshell);
                out.push_back(RawCommand{RawCommand::Kind::subshell_open, {}, line_, line_});
            } else if (c == ')') {
                ++pos_;
                finish();
                // In `case x in a) ...` a ')' ends a pattern, not a subshell.
                if (!scopes_.empty() && scopes_.back() == Scope::subshell) {
                    scopes_.pop_back();
                    out.push_back(RawCommand{RawCommand::Kind::subshell_close, {}, line_, line_});
                }
            } else if (c == '<' && peek(1) == '<' && peek(2) != '<') {
                read_heredoc_start();
            } else {
                if (current.words.empty()) current.line = line_;
                RawWord word = read_word();
                current.last_line = line_;
                if (at_command_start(current)) {
                    if (word.raw == "case") scopes_.push_back(Scope::case_patterns);
                    if (word.raw == "esac" && !scopes_.empty() && scopes_.back() == Scope::case_patterns) {
                        scopes_.pop_back();
                    }
                }
                if (current.words.size() < kMaxWords && (!word.raw.empty() || word.is_array)) {
                    current.words.push_back(std::move(word));
                }
            }
        }
        finish();
        if (!heredocs_.empty()) {
            notes_.push_back("line " + std::to_string(line_) + ": heredoc '" + heredocs_.front().first +
                             "' is never closed");
        }
        return out;
    }

private:
    enum class Scope { subshell, case_patterns };

    // Only reserved words so far: the next word is in command position.
    static bool at_command_start(const RawCommand& command) {
        return std::all_of(command.words.begin(), command.words.end(), [](const RawWord& w) {
            return w.raw == "then" || w.raw == "do" || w.raw == "else" || w.raw == "elif" || w.raw == "{" ||
                   w.raw == "!";
        });
    }

    [[nodiscard]] char peek(std::size_t ahead) const {
        return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
    }

    void skip_comment() {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    }

    // `<<WORD`, `<<-WORD`, `<<'WORD'`: the body starts on the next line and is skipped there.
    void read_heredoc_start() {
        pos_ += 2;
        bool strip_tabs = false;
        if (peek(0) == '-') {
            strip_tabs = true;
            ++pos_;
        }
        while (peek(0) == ' ' || peek(0) == '\t') ++pos_;
        std::string delimiter;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == '\'' || c == '"' || c == '\\') {
                ++pos_;
                continue;
            }
            if (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' ||
                c == ')') {
                break;
            }
            delimiter += c;
            ++pos_;
        }
        if (delimiter.empty()) {
            notes_.push_back("line " + std::to_string(line_) + ": '<<' without a delimiter");
            return;
        }
        heredocs_.emplace_back(delimiter, strip_tabs);
    }

    void skip_heredocs() {
        while (!heredocs_.empty()) {
            auto [delimiter, strip_tabs] = heredocs_.front();
            heredocs_.erase(heredocs_.begin());
            int start = line_;
            bool closed = false;
            while (pos_ < text_.size()) {
                std::size_t end = text_.find('\n', pos_);
                std::string_view body_line =
                    text_.substr(pos_, (end == std::string_view::npos ? text_.size() : end) - pos_);
                pos_ = end == std::string_view::npos ? text_.size() : end + 1;
                ++line_;
                if (strip_tabs) {
                    while (!body_line.empty() && body_line.front() == '\t') body_line.remove_prefix(1);
                }
                if (!body_line.empty() && body_line.back() == '\r') body_line.remove_suffix(1);
                if (body_line == delimiter) {
                    closed = true;
                    break;
                }
            }
            if (!closed) {
                notes_.push_back("line " + std::to_string(start) + ": heredoc '" + delimiter +
                                 "' is never closed; the rest of the script is its body");
            }
        }
    }

    void note_unterminated(std::string_view what, int line) {
        unterminated_ = true;
        notes_.push_back("line " + std::to_string(line) + ": unterminated " + std::string(what) +
                         "; the rest of the script is read as part of it");
    }

    // Appends the rest of a '...' string (the opening quote already appended).
    void read_single_quoted(std::string& out) {
        int start = line_;
        while (pos_ < text_.size()) {
            char c = text_[pos_++];
            out += c;
            if (c == '\n') ++line_;
            if (c == '\'') return;
        }
        note_unterminated("single quote", start);
    }

    void read_double_quoted(std::string& out) {
        if (too_deep(out)) return;
        Nested nested(nesting_);
        int start = line_;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == '\\' && pos_ + 1 < text_.size()) {
                if (text_[pos_ + 1] == '\n') ++line_;
                out += text_.substr(pos_, 2);
                pos_ += 2;
                continue;
            }
            if (c == '$' && (peek(1) == '(' || peek(1) == '{')) {
                read_dollar_group(out);
                continue;
            }
            if (c == '`') {
                read_backquoted(out);
                continue;
            }
            ++pos_;
            out += c;
            if (c == '\n') ++line_;
            if (c == '"') return;
        }
        note_unterminated("double quote", start);
    }

    void read_backquoted(std::string& out) {
        int start = line_;
        out += text_[pos_++];
        while (pos_ < text_.size()) {
            char c = text_[pos_++];
            out += c;
            if (c == '\n') ++line_;
            if (c == '\\' && pos_ < text_.size()) {
                out += text_[pos_++];
            } else if (c == '`') {
                return;
            }
        }
        note_unterminated("backquote", start);
    }

    // Keeps the lexer's recursion (quotes in $(...) in quotes ...) bounded:
    // past kMaxNesting the rest of the input is taken as written.
    bool too_deep(std::string& out) {
        if (nesting_ < kMaxNesting) return false;
        notes_.push_back("line " + std::to_string(line_) + ": quotes and $(...) nested more than " +
                         std::to_string(kMaxNesting) + " deep; the rest of the script is not read");
        out += text_.substr(pos_);
        pos_ = text_.size();
        return true;
    }

    struct Nested {
        explicit Nested(int& depth) : depth_(depth) { ++depth_; }
        ~Nested() { --depth_; }
        Nested(const Nested&) = delete;
        Nested& operator=(const Nested&) = delete;
        int& depth_;
    };

    // $( ... ) or ${ ... }, with nesting and quotes inside.
    void read_dollar_group(std::string& out) {
        if (too_deep(out)) return;
        Nested nested(nesting_);
        int start = line_;
        const char open = text_[pos_ + 1];
        const char close = open == '(' ? ')' : '}';
        out += text_.substr(pos_, 2);
        pos_ += 2;
        int depth = 1;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == '\'') {
                out += text_[pos_++];
                read_single_quoted(out);
            } else if (c == '"') {
                out += text_[pos_++];
                read_double_quoted(out);
            } else if (c == '\\' && pos_ + 1 < text_.size()) {
                out += text_.substr(pos_, 2);
                pos_ += 2;
            } else {
                ++pos_;
                out += c;
                if (c == '\n') ++line_;
                if (c == open) ++depth;
                if (c == close && --depth == 0) return;
            }
        }
        note_unterminated(open == '(' ? "$(" : "${", start);
    }

    RawWord read_word() {
        RawWord word;
        word.line = line_;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '&' || c == '|' || c == ')') break;
            if (c == '<' && peek(1) == '<' && peek(2) != '<') break;  // cat<<EOF: the heredoc starts here
            if (c == '(') {
                // NAME=( ... ) and NAME+=( ... ) are arrays; `name()` a function.
                std::string_view raw = word.raw;
                bool assignment = raw.size() > 1 && raw.back() == '=' &&
                                  is_name(raw.substr(0, raw.size() - (raw.ends_with("+=") ? 2 : 1)));
                if (assignment) {
                    ++pos_;
                    word.is_array = true;
                    read_array(word);
                    word.end = pos_;
                    return word;
                }
                if (word.raw.empty()) break;
                if (word.raw.back() == '<' || word.raw.back() == '>') {
                    // <(...) and >(...), process substitution: read like $(...).
                    word.raw.pop_back();
                    --pos_;
                    read_dollar_group(word.raw);
                    continue;
                }
                word.raw += c;
                ++pos_;
                if (peek(0) == ')') {  // name(): a function definition
                    word.raw += ')';
                    ++pos_;
                }
                continue;
            }
            if (c == '\\' && pos_ + 1 < text_.size()) {
                if (text_[pos_ + 1] == '\n') {
                    pos_ += 2;
                    ++line_;
                    continue;
                }
                word.raw += text_.substr(pos_, 2);
                pos_ += 2;
            } else if (c == '\'') {
                word.raw += text_[pos_++];
                read_single_quoted(word.raw);
            } else if (c == '"') {
                word.raw += text_[pos_++];
                read_double_quoted(word.raw);
            } else if (c == '`') {
                read_backquoted(word.raw);
            } else if (c == '$' && (peek(1) == '(' || peek(1) == '{')) {
                read_dollar_group(word.raw);
            } else {
                word.raw += c;
                ++pos_;
            }
        }
        // The word ends at its last character, before any line continuation after it.
        word.end = pos_;
        // An unclosed construct takes the rest of the script, so the word ends inside it.
        word.complete = !(unterminated_ && pos_ == text_.size());
        while (word.end >= 2 && text_[word.end - 1] == '\n' && text_[word.end - 2] == '\\') word.end -= 2;
        return word;
    }

    void read_array(RawWord& array) {
        int start = line_;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == ' ' || c == '\t' || c == '\r') {
                ++pos_;
            } else if (c == '\n') {
                ++pos_;
                ++line_;
            } else if (c == '#') {
                skip_comment();
            } else if (c == ')') {
                ++pos_;
                return;
            } else if (c == ';' || c == '&' || c == '|' || c == '(') {
                ++pos_;  // not valid inside an array; skipped so the reader always advances
            } else {
                RawWord element = read_word();
                if (element.raw.empty() && !element.is_array) {
                    ++pos_;
                    continue;
                }
                if (array.elements.size() < kMaxWords) array.elements.push_back(std::move(element));
            }
        }
        note_unterminated("array '('", start);
    }

    std::string_view text_;
    std::size_t pos_ = 0;
    int line_;
    std::vector<std::string>& notes_;
    std::vector<std::pair<std::string, bool>> heredocs_;  // delimiter, strip leading tabs
    int nesting_ = 0;
    bool unterminated_ = false;  // a quote, backquote or $( ran to the end of the text
    std::vector<Scope> scopes_;  // open subshells and case pattern lists, innermost last
};

// ---------------------------------------------------------------- expansion

// A word after expansion: its text, or unknown and why.
struct Word {
    std::string text;
    bool known = true;
    std::string why_unknown;  // the construct that makes it unknown, as written
    // Where in `text` each run-time construct stands, with the construct as
    // written; empty for an unknown word that has no known shape at all.
    std::vector<RuntimePart> runtime_parts;
};

struct ShellVariable {
    std::optional<std::string> value;  // nullopt: unknown
    std::vector<Word> array;           // elements, each known or not
    bool array_known = true;           // false when the whole array is unknown (set under a condition)
    bool exported = false;
    int line = 0;
    std::string origin;
    std::string why_unknown;
};

// How a step's environment differs from the script's exports because of
// the wrappers it is started through (`env -i`, `env -u X`, `env X=1`, `sudo`).
struct EnvEdit {
    enum class Kind { clear, unset, set, unknown };
    Kind kind = Kind::set;
    std::string name;
    Word value;           // for set
    std::string wrapper;  // "env", "sudo", "exec -c": for notes and origins
};

// Where srun starts behind its wrappers, and what they do to its environment.
struct StepStart {
    std::size_t srun = 0;  // index of the srun word
    std::vector<EnvEdit> edits;
};

// The last path component: /usr/bin/srun is srun.
std::string_view base_name(std::string_view word) {
    std::size_t slash = word.rfind('/');
    return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

bool is_option_word(const Word& word) { return word.known && word.text.size() > 1 && word.text.front() == '-'; }

// NAME=VALUE as env and sudo take it before the command.
std::optional<EnvEdit> env_assignment(const Word& word, const std::string& wrapper) {
    std::size_t eq = word.text.find('=');
    if (eq == std::string::npos || eq == 0 || !is_name(std::string_view(word.text).substr(0, eq))) return std::nullopt;
    EnvEdit edit{EnvEdit::Kind::set, word.text.substr(0, eq), word, wrapper};
    edit.value.text = word.text.substr(eq + 1);
    return edit;
}

// Skips the options of a wrapper whose value-taking options are `value_options`
// (as separate words; "-sX" and "--opt=X" are one word); returns the index of
// the first operand.
std::size_t skip_wrapper_options(const std::vector<Word>& words, std::size_t i,
                                 std::initializer_list<std::string_view> value_options) {
    while (i < words.size() && is_option_word(words[i])) {
        const std::string& option = words[i].text;
        ++i;
        if (option == "--") break;
        if (std::find(value_options.begin(), value_options.end(), option) != value_options.end()) ++i;
    }
    return i;
}

// env [-i] [-u NAME] [-C DIR] [NAME=VALUE]... COMMAND: returns the index of COMMAND.
std::size_t read_env_wrapper(const std::vector<Word>& words, std::size_t i, std::vector<EnvEdit>& edits) {
    bool options_done = false;
    while (i < words.size()) {
        const Word& word = words[i];
        const std::string& a = word.text;
        if (auto assignment = env_assignment(word, "env")) {
            edits.push_back(std::move(*assignment));  // NAME=$(...) too: a known name, its value unknown
            ++i;
        } else if (!word.known) {
            // env $VARS srun: assignments or options the script computes.
            edits.push_back(EnvEdit{EnvEdit::Kind::unknown, "", {}, "env " + word.why_unknown});
            ++i;
        } else if (!options_done && a == "--") {
            options_done = true;
            ++i;
        } else if (!options_done && (a == "-i" || a == "--ignore-environment" || a == "-")) {
            edits.push_back(EnvEdit{EnvEdit::Kind::clear, "", {}, "env " + a});
            ++i;
        } else if (!options_done && (a == "-u" || a == "--unset")) {
            if (i + 1 < words.size()) edits.push_back(EnvEdit{EnvEdit::Kind::unset, words[i + 1].text, {}, "env -u"});
            i += 2;
        } else if (!options_done && (a.starts_with("--unset=") || (a.starts_with("-u") && a.size() > 2))) {
            edits.push_back(EnvEdit{EnvEdit::Kind::unset, a.substr(a.starts_with("--") ? 8 : 2), {}, "env -u"});
            ++i;
        } else if (!options_done && (a == "-C" || a == "--chdir")) {
            i += 2;
        } else if (!options_done && (a == "-S" || a.starts_with("-S") || a.starts_with("--split-string"))) {
            return words.size();  // the command is inside a string env splits: not followed
        } else if (!options_done && a.size() > 1 && a.front() == '-') {
            ++i;  // -0, -v, --chdir=DIR, signal options: no effect on the environment
        } else {
            break;
        }
    }
    return i;
}

// sudo [options] [NAME=VALUE]... COMMAND. Without -E (--preserve-env) sudo
// resets the environment to what the sudoers policy keeps, which the
// script does not show.
std::size_t read_sudo_wrapper(const std::vector<Word>& words, std::size_t i, std::vector<EnvEdit>& edits) {
    constexpr std::string_view kShortWithValue = "ugCDhprtTUR";
    constexpr std::array kLongWithValue = {"--user",   "--group", "--close-from", "--chdir",           "--host",
                                           "--prompt", "--role",  "--type",       "--command-timeout", "--other-user",
                                           "--chroot"};
    bool keeps_environment = false;
    std::size_t reset_at = edits.size();
    while (i < words.size() && is_option_word(words[i])) {
        const std::string& a = words[i].text;
        ++i;
        if (a == "--") break;
        if (a == "--preserve-env") {
            keeps_environment = true;
        } else if (a.starts_with("--")) {
            if (a.find('=') == std::string::npos &&
                std::find(kLongWithValue.begin(), kLongWithValue.end(), a) != kLongWithValue.end()) {
                ++i;
            }
        } else {
            for (std::size_t j = 1; j < a.size(); ++j) {
                if (a[j] == 'E') keeps_environment = true;
                if (kShortWithValue.find(a[j]) != std::string_view::npos) {
                    if (j + 1 == a.size()) ++i;  // the value is the next word
                    break;
                }
            }
        }
    }
    if (!keeps_environment) {
        edits.insert(
            edits.begin() + static_cast<std::ptrdiff_t>(reset_at),
            EnvEdit{
                EnvEdit::Kind::unknown, "", {}, "sudo without -E (the environment is what the sudoers policy keeps)"});
    }
    while (i < words.size()) {
        auto assignment = env_assignment(words[i], "sudo");
        if (!assignment) break;
        edits.push_back(std::move(*assignment));
        ++i;
    }
    return i;
}

// srun itself, or a wrapper that may run it.
bool starts_step(std::string_view name) {
    return name == "srun" || name == "env" || name == "timeout" || name == "nohup" || name == "command" ||
           name == "stdbuf" || name == "nice" || name == "time" || name == "exec" || name == "sudo";
}

// Finds srun in a command, behind the wrappers that run it: env, timeout,
// nohup, command, stdbuf, nice, sudo, exec, time (in any order, by any path).
// nullopt when the command runs no srun that the text shows.
std::optional<StepStart> find_srun(const std::vector<Word>& words) {
    StepStart start;
    std::size_t i = 0;
    while (i < words.size()) {
        const Word& word = words[i];
        if (!word.known) return std::nullopt;
        std::string_view name = base_name(word.text);
        if (name == "srun") {
            start.srun = i;
            return start;
        }
        ++i;
        if (name == "env") {
            i = read_env_wrapper(words, i, start.edits);
        } else if (name == "timeout") {
            i = skip_wrapper_options(words, i, {"-s", "-k", "--signal", "--kill-after"}) + 1;  // then DURATION
        } else if (name == "nohup") {
            i = skip_wrapper_options(words, i, {});
        } else if (name == "command") {
            for (std::size_t j = i; j < words.size() && is_option_word(words[j]) && words[j].text != "--"; ++j) {
                if (words[j].text.find_first_of("vV") != std::string::npos) return std::nullopt;  // a lookup
            }
            i = skip_wrapper_options(words, i, {});
        } else if (name == "stdbuf") {
            i = skip_wrapper_options(words, i, {"-i", "-o", "-e"});
        } else if (name == "nice") {
            i = skip_wrapper_options(words, i, {"-n"});
        } else if (name == "time") {
            i = skip_wrapper_options(words, i, {"-f", "-o", "--format", "--output"});
        } else if (name == "exec") {
            for (std::size_t j = i; j < words.size() && is_option_word(words[j]) && words[j].text != "--"; ++j) {
                const std::string& option = words[j].text;
                if (option == "-a") {
                    ++j;
                } else if (option.find('c') != std::string::npos) {
                    start.edits.push_back(EnvEdit{EnvEdit::Kind::clear, "", {}, "exec -c"});
                }
            }
            i = skip_wrapper_options(words, i, {"-a"});
        } else if (name == "sudo") {
            i = read_sudo_wrapper(words, i, start.edits);
        } else {
            return std::nullopt;
        }
    }
    return std::nullopt;
}

class Shell {
public:
    Shell(BatchScript& script, int nesting) : script_(script), nesting_(nesting) {}

    void run(const std::vector<RawCommand>& commands) {
        for (const auto& command : commands) {
            if (refusal) return;
            switch (command.kind) {
                case RawCommand::Kind::subshell_open:
                    enter_subshell(command.line);
                    break;
                case RawCommand::Kind::subshell_close:
                    leave_subshell();
                    break;
                case RawCommand::Kind::simple:
                    run_command(command);
                    break;
            }
        }
    }

    std::map<std::string, ShellVariable, std::less<>> variables;
    bool allexport = false;
    int conditional_depth = 0;
    // Offsets where each physical line of the script starts (the top-level shell only).
    std::vector<std::size_t> line_starts;
    // Set when the script has more steps than a review judges: the reading stops.
    std::optional<std::pair<int, std::string>> refusal;

private:
    // What a subshell changes is undone when it closes: each variable's value
    // from before its first change inside, and the allexport flag.
    struct SubshellFrame {
        std::map<std::string, std::optional<ShellVariable>, std::less<>> saved;
        bool allexport = false;
    };

    void enter_subshell(int line) {
        if (subshells_.size() >= kMaxSubshellDepth) {
            ++subshells_unsaved_;
            if (!subshells_too_deep_) {
                script_.notes.push_back("line " + std::to_string(line) + ": subshells nested more than " +
                                        std::to_string(kMaxSubshellDepth) +
                                        " deep; what the deeper ones set is read as set in the one around them");
                subshells_too_deep_ = true;
            }
            return;
        }
        subshells_.push_back(SubshellFrame{{}, allexport});
    }

    void leave_subshell() {
        if (subshells_unsaved_ > 0) {
            --subshells_unsaved_;
            return;
        }
        if (subshells_.empty()) return;
        for (auto& [name, old] : subshells_.back().saved) {
            if (old) {
                variables[name] = std::move(*old);
            } else {
                variables.erase(name);
            }
        }
        allexport = subshells_.back().allexport;
        subshells_.pop_back();
    }

    // Called before `name` changes: inside a subshell, keeps its old state to restore.
    void will_change(const std::string& name) {
        if (subshells_.empty()) return;
        auto& saved = subshells_.back().saved;
        if (saved.count(name) != 0) return;
        auto it = variables.find(name);
        std::size_t bytes = name.size();
        if (it != variables.end()) {
            bytes += it->second.value ? it->second.value->size() : 0;
            for (const auto& element : it->second.array) bytes += element.text.size();
        }
        if (subshell_saved_bytes_ + bytes > kMaxSubshellSavedBytes) {
            if (!subshell_budget_noted_) {
                script_.notes.push_back("variables changed inside subshells hold more than " +
                                        std::to_string(kMaxSubshellSavedBytes) + " bytes; from " + name +
                                        " on, what a subshell sets is read as set after it too");
                subshell_budget_noted_ = true;
            }
            return;
        }
        subshell_saved_bytes_ += bytes;
        saved.emplace(name, it == variables.end() ? std::nullopt : std::optional<ShellVariable>(it->second));
    }

    // Expands one word. Unquoted expansions that come out empty vanish, as in the shell.
    std::vector<Word> expand(const RawWord& raw) {
        std::string_view text = raw.raw;
        if (expand_depth_ >= kMaxNesting) return {Word{"", false, "defaults nested too deep", {}}};
        ++expand_depth_;
        std::vector<Word> words = expand_unguarded(text);
        --expand_depth_;
        return words;
    }

    std::vector<Word> expand_unguarded(std::string_view text) {
        // "${A[@]}": the array's elements, one word each.
        std::string_view bare = text;
        if (bare.size() >= 2 && bare.front() == '"' && bare.back() == '"') bare = bare.substr(1, bare.size() - 2);
        if (bare.starts_with("${") && (bare.ends_with("[@]}") || bare.ends_with("[*]}"))) {
            std::string_view name = bare.substr(2, bare.size() - 6);
            auto it = variables.find(name);
            if (it == variables.end()) return {};
            if (!it->second.array_known) return {Word{"", false, std::string(text), {}}};
            return it->second.array;
        }
        Word word;
        bool quoted = false;
        bool had_expansion = false;
        std::size_t i = 0;
        auto unknown = [&](std::string_view construct) {
            if (word.known) word.why_unknown = std::string(construct);
            word.known = false;
            word.runtime_parts.push_back({word.text.size(), std::string(construct)});
        };
        while (i < text.size()) {
            char c = text[i];
            if (c == '\'') {
                quoted = true;
                std::size_t end = text.find('\'', i + 1);
                if (end == std::string_view::npos) end = text.size();
                word.text += text.substr(i + 1, end - i - 1);
                i = end + 1;
            } else if (c == '"') {
                quoted = true;
                ++i;
                while (i < text.size() && text[i] != '"') {
                    if (text[i] == '\\' && i + 1 < text.size() &&
                        std::string_view("$`\"\\\n").find(text[i + 1]) != std::string_view::npos) {
                        if (text[i + 1] != '\n') word.text += text[i + 1];
                        i += 2;
                    } else if (text[i] == '$' || text[i] == '`') {
                        had_expansion = true;
                        i = expand_dollar(text, i, word, unknown);
                    } else {
                        word.text += text[i++];
                    }
                }
                ++i;
            } else if (c == '\\' && i + 1 < text.size()) {
                word.text += text[i + 1];
                i += 2;
            } else if (c == '$' || c == '`') {
                had_expansion = true;
                i = expand_dollar(text, i, word, unknown);
            } else if (c == '~' && i == 0) {
                unknown("~ (the home directory on the compute node)");
                ++i;
            } else {
                word.text += c;
                ++i;
            }
        }
        if (!quoted && had_expansion && word.known && word.text.empty()) return {};
        return {word};
    }

    // Expands the $-construct (or backquote) at text[i]; returns the index after it.
    template <typename Unknown>
    std::size_t expand_dollar(std::string_view text, std::size_t i, Word& word, Unknown&& unknown) {
        if (text[i] == '`') {
            std::size_t end = text.find('`', i + 1);
            end = end == std::string_view::npos ? text.size() : end + 1;
            unknown(text.substr(i, end - i));
            return end;
        }
        if (i + 1 >= text.size()) {
            word.text += '$';
            return i + 1;
        }
        char next = text[i + 1];
        if (next == '(' || next == '{') {
            std::size_t end = matching(text, i + 1);
            std::string_view group = text.substr(i, end - i);
            if (next == '(') {
                unknown(group);
            } else {
                expand_parameter(group.substr(2, group.size() >= 3 ? group.size() - 3 : 0), group, word, unknown);
            }
            return end;
        }
        if (is_name_start(next)) {
            std::size_t end = i + 1;
            while (end < text.size() && is_name_char(text[end])) ++end;
            append_variable(text.substr(i + 1, end - i - 1), text.substr(i, end - i), word, unknown);
            return end;
        }
        if (std::isdigit(static_cast<unsigned char>(next)) != 0 ||
            std::string_view("@*#?$!-").find(next) != std::string_view::npos) {
            unknown(text.substr(i, 2));
            return i + 2;
        }
        word.text += '$';
        return i + 1;
    }

    // Index just after the bracket that closes the one at text[open].
    static std::size_t matching(std::string_view text, std::size_t open) {
        const char o = text[open];
        const char c = o == '(' ? ')' : '}';
        int depth = 0;
        for (std::size_t i = open; i < text.size(); ++i) {
            if (text[i] == '\\') {
                ++i;
            } else if (text[i] == '\'' && o == '(') {
                std::size_t end = text.find('\'', i + 1);
                if (end == std::string_view::npos) return text.size();
                i = end;
            } else if (text[i] == o) {
                ++depth;
            } else if (text[i] == c && --depth == 0) {
                return i + 1;
            }
        }
        return text.size();
    }

    template <typename Unknown>
    void append_variable(std::string_view name, std::string_view written, Word& word, Unknown&& unknown) {
        auto it = variables.find(name);
        if (it == variables.end() || !it->second.value) {
            unknown(written);
            return;
        }
        append_text(word, *it->second.value, written, unknown);
    }

    template <typename Unknown>
    static void append_text(Word& word, std::string_view text, std::string_view written, Unknown&& unknown) {
        if (word.text.size() + text.size() > kMaxValueBytes) {
            unknown(std::string(written) + " (longer than " + std::to_string(kMaxValueBytes) + " bytes)");
            return;
        }
        word.text += text;
    }

    // ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:=default}; any other form is unknown.
    template <typename Unknown>
    void expand_parameter(std::string_view inner, std::string_view written, Word& word, Unknown&& unknown) {
        std::size_t name_end = 0;
        while (name_end < inner.size() && is_name_char(inner[name_end])) ++name_end;
        std::string_view name = inner.substr(0, name_end);
        std::string_view op = inner.substr(name_end);
        if (name.empty()) {
            unknown(written);
            return;
        }
        if (op.empty()) {
            append_variable(name, written, word, unknown);
            return;
        }
        bool assign = op.starts_with(":=") || op.starts_with("=");
        bool use_default = op.starts_with(":-") || op.starts_with("-") || assign;
        if (!use_default) {
            unknown(written);
            return;
        }
        auto it = variables.find(name);
        if (it != variables.end() && it->second.value && !(op.front() == ':' && it->second.value->empty())) {
            append_text(word, *it->second.value, written, unknown);
            return;
        }
        if (it != variables.end() && !it->second.value) {
            unknown(written);
            return;
        }
        // The script's default: what the job gets unless the submitting shell
        // (sbatch exports it by default) or a positional argument sets it.
        std::string_view fallback = op.substr(op.front() == ':' ? 2 : 1);
        std::vector<Word> expanded = expand(RawWord{std::string(fallback), 0, false, {}});
        Word value = expanded.empty() ? Word{} : expanded.front();
        if (!value.known) {
            unknown(written);
        } else {
            append_text(word, value.text, written, unknown);
        }
        if (assign && std::isdigit(static_cast<unsigned char>(name.front())) == 0) {
            set_variable(std::string(name), value.known ? std::optional<std::string>(value.text) : std::nullopt,
                         value.why_unknown, 0, "default", false);
        }
    }

    // False, with one note, once the script has set kMaxVariables others.
    bool room_for(const std::string& name) {
        if (variables.size() < kMaxVariables || variables.count(name) != 0) return true;
        if (!variables_dropped_) {
            script_.notes.push_back("the script sets more than " + std::to_string(kMaxVariables) +
                                    " variables; the later ones (first: " + name + ") are not followed");
            variables_dropped_ = true;
        }
        return false;
    }

    void set_variable(const std::string& name, std::optional<std::string> value, const std::string& why, int line,
                      const std::string& origin, bool export_it) {
        if (!room_for(name)) return;
        will_change(name);
        ShellVariable& variable = variables[name];
        if (conditional_depth > 0 && value) {
            value.reset();
        }
        std::string reason = why;
        if (conditional_depth > 0 && reason.empty()) reason = "set inside if/case/loop, so only when a condition holds";
        variable.value = std::move(value);
        variable.why_unknown = variable.value ? "" : reason;
        variable.line = line;
        variable.origin = origin;
        variable.exported = variable.exported || export_it || allexport;
    }

    void assign(const RawWord& raw, int line, bool export_it, const std::string& origin) {
        std::string_view text = raw.raw;
        std::size_t eq = text.find('=');
        bool append = eq > 0 && eq != std::string_view::npos && text[eq - 1] == '+';
        std::string name(text.substr(0, append ? eq - 1 : eq));
        if (raw.is_array) {
            if (!room_for(name)) return;
            will_change(name);
            ShellVariable& variable = variables[name];
            if (!append) {
                variable.array.clear();
                variable.array_known = true;
            }
            for (const auto& element : raw.elements) {
                for (auto& word : expand(element)) {
                    if (variable.array.size() < kMaxWords) variable.array.push_back(std::move(word));
                }
            }
            if (conditional_depth > 0) variable.array_known = false;
            variable.line = line;
            return;
        }
        std::vector<Word> value = expand(RawWord{std::string(text.substr(eq + 1)), raw.line, false, {}});
        Word word = value.empty() ? Word{} : value.front();
        std::optional<std::string> known;
        if (word.known) {
            std::string prefix;
            auto it = variables.find(name);
            if (append && it != variables.end()) {
                if (!it->second.value) {
                    word.known = false;
                    word.why_unknown = "appends to " + name + ", whose value is unknown";
                } else {
                    prefix = *it->second.value;
                }
            }
            if (word.known && prefix.size() + word.text.size() > kMaxValueBytes) {
                word.known = false;
                word.why_unknown = "longer than " + std::to_string(kMaxValueBytes) + " bytes";
            }
            if (word.known) known = prefix + word.text;
        }
        set_variable(name, known, word.why_unknown, line, origin, export_it);
    }

    static bool is_assignment(const RawWord& word) {
        std::string_view text = word.raw;
        std::size_t eq = text.find('=');
        if (eq == std::string_view::npos || eq == 0) return false;
        std::string_view name = text.substr(0, text[eq - 1] == '+' ? eq - 1 : eq);
        return is_name(name);
    }

    static bool opens_block(std::string_view w) {
        return w == "if" || w == "while" || w == "until" || w == "for" || w == "case" || w == "select" || w == "{";
    }

    void run_command(const RawCommand& command) {
        std::size_t first = 0;
        const auto& words = command.words;
        // Reserved words that open or close a block, or just precede a command.
        while (first < words.size()) {
            const std::string& w = words[first].raw;
            if (w == "if" || w == "while" || w == "until" || w == "for" || w == "case" || w == "select" || w == "{" ||
                w == "function" || (w.size() > 2 && w.ends_with("()"))) {
                ++conditional_depth;
                // `for x in ...`, `case x in`, `function f`: the rest of the line is no command.
                if (w == "for" || w == "case" || w == "select" || w == "function" || w.ends_with("()")) return;
            } else if (w == "fi" || w == "done" || w == "esac" || w == "}") {
                conditional_depth = std::max(0, conditional_depth - 1);
            } else if (w == "[[" || w == "[" || w == "test") {
                return;  // a test: nothing to read
            } else if (w == "time" && first + 1 < words.size() && opens_block(words[first + 1].raw)) {
                // `time { ...; }`, `time if ...`: the keyword before a block, not a wrapper.
            } else if (w != "then" && w != "else" && w != "elif" && w != "do" && w != "!") {
                break;  // `time` and `exec` are read as wrappers, with their options
            }
            ++first;
        }
        if (first >= words.size()) return;

        std::vector<const RawWord*> prefixes;
        while (first < words.size() && is_assignment(words[first])) prefixes.push_back(&words[first++]);
        if (first >= words.size()) {
            for (const RawWord* p : prefixes) assign(*p, command.line, false, "line " + std::to_string(command.line));
            return;
        }
        const std::string& name = words[first].raw;
        std::vector<RawWord> rest(words.begin() + static_cast<std::ptrdiff_t>(first) + 1, words.end());
        if (name == "export" || name == "declare" || name == "typeset" || name == "local" || name == "readonly") {
            run_declaration(name, rest, command.line);
        } else if (name == "unset") {
            run_unset(rest, command.line);
        } else if (name == "set") {
            for (std::size_t i = 0; i < rest.size(); ++i) {
                const std::string& flag = rest[i].raw;
                if (flag.starts_with("-") && flag.find('a') != std::string::npos && !flag.starts_with("--")) {
                    allexport = true;
                }
                if (flag == "-o" && i + 1 < rest.size() && rest[i + 1].raw == "allexport") allexport = true;
            }
        } else if (name == ":") {
            for (const auto& w : rest) expand(w);  // ${X:=default} assigns
        } else {
            run_program(prefixes, first, command);
        }
    }

    // A command that is no builtin the reader follows: a step when it runs
    // srun, directly or through wrappers.
    void run_program(const std::vector<const RawWord*>& prefixes, std::size_t first, const RawCommand& command) {
        // Only srun and its wrappers are read further (and expanded, with
        // the side effects of ${X:=default} that expansion has).
        auto head = expand(command.words[first]);
        if (head.empty() || !head.front().known || !starts_step(base_name(head.front().text))) return;
        std::vector<Word> words;
        std::vector<const RawWord*> sources;  // the raw word each expanded word comes from
        std::vector<bool> alone;              // the raw word expanded to this word only
        std::size_t bytes = 0;
        for (std::size_t i = first; i < command.words.size(); ++i) {
            auto expanded = i == first ? std::move(head) : expand(command.words[i]);
            for (auto& word : expanded) {
                if (words.size() >= kMaxWords) break;
                bytes += word.text.size();
                if (!charge_step_bytes(bytes, command.line)) return;
                words.push_back(std::move(word));
                sources.push_back(&command.words[i]);
                alone.push_back(expanded.size() == 1);
            }
        }
        auto start = find_srun(words);
        if (!start) return;
        std::vector<int> lines;
        for (std::size_t i = start->srun + 1; i < words.size(); ++i) lines.push_back(sources[i]->line);
        std::optional<std::size_t> srun_end;
        if (alone[start->srun] && sources[start->srun]->complete) srun_end = sources[start->srun]->end;
        words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(start->srun) + 1);
        step_bytes_ += bytes;
        run_srun(prefixes, *start, words, lines, srun_end, command);
    }

    // unset [-v] NAME...: the variable is gone, from the script and from the
    // steps after it (-f names functions, which the reader does not follow).
    void run_unset(const std::vector<RawWord>& args, int line) {
        bool functions = false;
        for (const auto& arg : args) {
            if (arg.raw.starts_with("-") && arg.raw.size() > 1) {
                if (arg.raw.find('f') != std::string::npos) functions = true;
                if (arg.raw.find('v') != std::string::npos) functions = false;
                continue;
            }
            if (functions) continue;
            auto expanded = expand(arg);
            if (expanded.empty() || !expanded.front().known || variables.count(expanded.front().text) == 0) continue;
            const std::string& name = expanded.front().text;
            will_change(name);
            if (conditional_depth > 0) {
                // Unset only when a condition holds: its value is no longer known.
                ShellVariable& variable = variables[name];
                variable.value.reset();
                variable.array_known = false;
                variable.why_unknown = "unset inside if/case/loop on line " + std::to_string(line);
            } else {
                variables.erase(name);
            }
        }
    }

    void run_declaration(const std::string& keyword, const std::vector<RawWord>& args, int line) {
        bool export_it = keyword == "export";
        // `export -n NAME` and `declare +x NAME` take the export attribute
        // away: the variable stays, its children no longer get it.
        bool unexport = false;
        for (const auto& arg : args) {
            if ((arg.raw.starts_with("-") || arg.raw.starts_with("+")) && arg.raw.size() > 1 && !arg.is_array) {
                bool minus = arg.raw.front() == '-';
                if (arg.raw.find('x') != std::string::npos) {
                    export_it = minus;
                    unexport = !minus;
                }
                if (keyword == "export" && minus && arg.raw.find('n') != std::string::npos) {
                    export_it = false;
                    unexport = true;
                }
                continue;
            }
            std::string origin = keyword + " on line " + std::to_string(line);
            if (unexport) {
                std::string name = arg.raw.substr(0, arg.raw.find('='));
                if (name.ends_with('+')) name.pop_back();
                if (is_assignment(arg)) assign(arg, line, false, origin);
                if (auto it = variables.find(name); it != variables.end()) {
                    will_change(name);
                    it->second.exported = false;
                }
            } else if (is_assignment(arg)) {
                assign(arg, line, export_it, origin);
            } else if (is_name(arg.raw) && export_it && room_for(arg.raw)) {
                will_change(arg.raw);
                auto [it, inserted] = variables.try_emplace(arg.raw);
                if (inserted) {
                    // export NAME of a variable the script never set: the submitter's value, unknown.
                    it->second.why_unknown = "exported from the submitting shell";
                    it->second.line = line;
                    it->second.origin = origin;
                }
                it->second.exported = true;
            }
        }
    }

public:
    [[nodiscard]] VariableMap exported_variables() const {
        VariableMap out;
        for (const auto& [name, variable] : variables) {
            if (!variable.exported) continue;
            out[name] = Variable{name, variable.value, variable.line, variable.origin, variable.why_unknown};
        }
        return out;
    }

private:
    void run_srun(const std::vector<const RawWord*>& prefixes, const StepStart& start, const std::vector<Word>& words,
                  const std::vector<int>& lines, std::optional<std::size_t> srun_end, const RawCommand& command);
    void apply_wrapper_edits(SrunStep& step, const std::vector<EnvEdit>& edits, int line);
    bool within_step_bounds(const SrunStep& step);
    // False, and the script refused, when `more` bytes of a step's words
    // would take the steps past kMaxStepBytes.
    bool charge_step_bytes(std::size_t more, int line) {
        if (step_bytes_ + more <= kMaxStepBytes) return true;
        refusal.emplace(line, "the options and environments of the script's srun steps together are larger than " +
                                  std::to_string(kMaxStepBytes) +
                                  " bytes, the most launchguard judges; the script is refused rather than judged "
                                  "in part");
        return false;
    }

    BatchScript& script_;
    int nesting_;
    int expand_depth_ = 0;
    bool variables_dropped_ = false;
    std::vector<SubshellFrame> subshells_;
    std::size_t subshells_unsaved_ = 0;  // open past kMaxSubshellDepth
    bool subshells_too_deep_ = false;
    std::size_t subshell_saved_bytes_ = 0;
    bool subshell_budget_noted_ = false;
    std::size_t step_bytes_ = 0;  // options and environments of the steps so far
};

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

void Shell::apply_wrapper_edits(SrunStep& step, const std::vector<EnvEdit>& edits, int line) {
    for (const auto& edit : edits) {
        switch (edit.kind) {
            case EnvEdit::Kind::clear:
                step.environment.clear();
                break;
            case EnvEdit::Kind::unset:
                step.environment.erase(edit.name);
                break;
            case EnvEdit::Kind::set:
                step.environment[edit.name] =
                    Variable{edit.name, edit.value.known ? std::optional<std::string>(edit.value.text) : std::nullopt,
                             line, edit.wrapper + " on line " + std::to_string(line), edit.value.why_unknown};
                break;
            case EnvEdit::Kind::unknown:
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
bool Shell::within_step_bounds(const SrunStep& step) {
    std::size_t bytes = 0;
    for (const auto& [name, variable] : step.environment) {
        bytes += name.size() + (variable.value ? variable.value->size() : 0);
    }
    for (const auto& word : step.command) bytes += word.size();
    if (!charge_step_bytes(bytes, step.line)) return false;
    step_bytes_ += bytes;
    return true;
}

void Shell::run_srun(const std::vector<const RawWord*>& prefixes, const StepStart& start,
                     const std::vector<Word>& words, const std::vector<int>& lines, std::optional<std::size_t> srun_end,
                     const RawCommand& command) {
    if (script_.steps.size() >= kMaxSteps) {
        refusal.emplace(command.line, "the script runs more than " + std::to_string(kMaxSteps) +
                                          " srun steps; launchguard judges up to " + std::to_string(kMaxSteps) +
                                          " and refuses a script with more rather than judge part of it");
        return;
    }
    SrunStep step;
    if (srun_end && !line_starts.empty()) {
        // The line holding the end of the srun word, and the column there.
        auto next = std::upper_bound(line_starts.begin(), line_starts.end(), *srun_end - 1);
        std::size_t index = static_cast<std::size_t>(next - line_starts.begin()) - 1;
        step.options_line = static_cast<int>(index) + 1;
        step.options_column = *srun_end - line_starts[index];
    }
    step.line = command.line;
    step.last_line = command.last_line;
    step.conditional = conditional_depth > 0;
    step.environment = exported_variables();
    for (const RawWord* prefix : prefixes) {
        Shell scratch(script_, nesting_);
        scratch.variables = variables;
        scratch.assign(*prefix, command.line, true, "srun prefix on line " + std::to_string(command.line));
        std::string name = prefix->raw.substr(0, prefix->raw.find('='));
        if (name.ends_with('+')) name.pop_back();
        const ShellVariable& v = scratch.variables[name];
        step.environment[name] = Variable{name, v.value, command.line, v.origin, v.why_unknown};
    }
    apply_wrapper_edits(step, start.edits, command.line);

    std::size_t program = read_options(words, lines, step.options);
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

    // bash -c '...' as the program: its exports reach the job's processes.
    if (program + 2 < words.size()) {
        const std::string& shell = words[program].text;
        bool is_shell =
            shell == "bash" || shell == "sh" || shell == "/bin/bash" || shell == "/bin/sh" || shell == "/usr/bin/bash";
        if (is_shell && words[program + 1].text == "-c") {
            const Word& inner = words[program + 2];
            if (!inner.known) {
                script_.notes.push_back("line " + std::to_string(command.line) +
                                        ": the bash -c script of this step is computed at run time");
            } else if (nesting_ >= kMaxNestedShells) {
                script_.notes.push_back("line " + std::to_string(command.line) + ": bash -c nested too deep to follow");
            } else {
                std::vector<std::string> inner_notes;
                Lexer lexer(inner.text, command.line, inner_notes);
                BatchScript scratch_script;
                Shell inner_shell(scratch_script, nesting_ + 1);
                inner_shell.variables = variables;
                for (auto& [name, variable] : inner_shell.variables) variable.exported = false;
                inner_shell.run(lexer.commands());
                for (const auto& [name, variable] : inner_shell.variables) {
                    if (!variable.exported) continue;
                    step.environment[name] =
                        Variable{name, variable.value, command.line,
                                 "bash -c in the srun on line " + std::to_string(command.line), variable.why_unknown};
                }
                for (auto& note : inner_notes) script_.notes.push_back("bash -c: " + note);
            }
        }
    }
    if (within_step_bounds(step)) script_.steps.push_back(std::move(step));
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
            Lexer lexer(rest, number, notes);
            auto commands = lexer.commands();
            std::vector<Word> words;
            std::vector<int> lines;
            for (const auto& command : commands) {
                for (const auto& raw : command.words) {
                    // Directives are not shell: quotes are removed, nothing is expanded.
                    std::string text;
                    for (char c : raw.raw) {
                        if (c != '"' && c != '\'') text += c;
                    }
                    words.push_back(Word{text, true, {}, {}});
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

    Lexer lexer(text, 1, script.notes);
    Shell shell(script, 0);
    std::size_t offset = 0;
    for (const auto& line : script.lines) {
        shell.line_starts.push_back(offset);
        offset += line.size() + 1;
    }
    shell.run(lexer.commands());
    if (shell.refusal) return make_file_error(path, shell.refusal->first, shell.refusal->second);
    script.exported = shell.exported_variables();
    return script;
}

}  // namespace launchguard::slurm_script
