#include "shell/interpreter.h"

#include <algorithm>
#include <cctype>

#include "shell/wrappers.h"

namespace launchguard::shell {

void Interpreter::run(const std::vector<RawCommand>& commands) {
    for (const auto& command : commands) {
        if (stopped) return;
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

// ---------------------------------------------------------------- blocks

bool Interpreter::skipping() const {
    return std::any_of(blocks_.begin(), blocks_.end(), [](const Block& b) { return b.runs == false; });
}

bool Interpreter::conditional() const {
    return std::any_of(blocks_.begin(), blocks_.end(), [](const Block& b) { return !b.runs.has_value(); });
}

std::string Interpreter::condition_reason() const {
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
        if (it->runs.has_value()) continue;
        std::string what;
        switch (it->kind) {
            case Block::Kind::if_block:
                what = "the if";
                break;
            case Block::Kind::loop:
                what = "the loop";
                break;
            case Block::Kind::case_block:
                what = "the case";
                break;
            case Block::Kind::brace:
                what = "the && / || list";
                break;
            case Block::Kind::function:
                what = "the function";
                break;
        }
        return "set inside " + what + " on line " + std::to_string(it->line) +
               ", so only when a condition the script does not decide holds";
    }
    return {};
}

void Interpreter::open_block(Block::Kind kind, int line, std::optional<bool> runs) {
    Block block;
    block.kind = kind;
    block.line = line;
    block.runs = runs;
    blocks_.push_back(block);
}

void Interpreter::close_block() {
    std::size_t floor = subshells_.empty() ? 0 : subshells_.back().blocks;
    if (blocks_.size() > floor) blocks_.pop_back();
}

// ---------------------------------------------------------------- subshells

void Interpreter::enter_subshell(int line) {
    if (subshells_.size() >= kMaxSubshellDepth) {
        ++subshells_unsaved_;
        if (!subshells_too_deep_) {
            note("line " + std::to_string(line) + ": subshells nested more than " + std::to_string(kMaxSubshellDepth) +
                 " deep; what the deeper ones set is read as set in the one around them");
            subshells_too_deep_ = true;
        }
        return;
    }
    subshells_.push_back(SubshellFrame{{}, allexport, open_sources.size(), blocks_.size()});
}

void Interpreter::leave_subshell() {
    if (subshells_unsaved_ > 0) {
        --subshells_unsaved_;
        return;
    }
    if (subshells_.empty()) return;
    SubshellFrame& frame = subshells_.back();
    for (auto& [name, old] : frame.saved) {
        if (old) {
            variables[name] = std::move(*old);
        } else {
            variables.erase(name);
        }
    }
    allexport = frame.allexport;
    if (open_sources.size() > frame.open_sources) open_sources.resize(frame.open_sources);
    if (blocks_.size() > frame.blocks) blocks_.resize(frame.blocks);
    subshells_.pop_back();
}

// Called before `name` changes: inside a subshell, keeps its old state to restore.
void Interpreter::will_change(const std::string& name) {
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
            note("variables changed inside subshells hold more than " + std::to_string(kMaxSubshellSavedBytes) +
                 " bytes; from " + name + " on, what a subshell sets is read as set after it too");
            subshell_budget_noted_ = true;
        }
        return;
    }
    subshell_saved_bytes_ += bytes;
    saved.emplace(name, it == variables.end() ? std::nullopt : std::optional<Variable>(it->second));
}

// ---------------------------------------------------------------- variables

// False, with one note, once the script has set kMaxVariables others.
bool Interpreter::room_for(const std::string& name) {
    if (variables.size() < kMaxVariables || variables.count(name) != 0) return true;
    if (!variables_dropped_) {
        note("the script sets more than " + std::to_string(kMaxVariables) +
             " variables; the later ones (first: " + name + ") are not followed");
        variables_dropped_ = true;
    }
    return false;
}

void Interpreter::set_variable(const std::string& name, std::optional<std::string> value, const std::string& why,
                               int line, const std::string& origin, bool export_it) {
    if (!room_for(name)) return;
    will_change(name);
    Variable& variable = variables[name];
    std::string reason = why;
    if (conditional()) {
        value.reset();
        reason = condition_reason();
    }
    variable.value = std::move(value);
    variable.pattern.reset();
    variable.why_unknown = variable.value ? "" : reason;
    variable.line = line;
    variable.origin = origin;
    variable.exported = variable.exported || export_it || allexport;
}

void Interpreter::assign(const RawWord& raw, int line, bool export_it, const std::string& origin) {
    std::string_view text = raw.raw;
    std::size_t eq = text.find('=');
    bool append = eq > 0 && eq != std::string_view::npos && text[eq - 1] == '+';
    std::string name(text.substr(0, append ? eq - 1 : eq));
    if (raw.is_array) {
        if (!room_for(name)) return;
        will_change(name);
        Variable& variable = variables[name];
        if (!append) {
            variable.array.clear();
            variable.array_known = true;
        }
        for (const auto& element : raw.elements) {
            for (auto& word : expand(element)) {
                if (variable.array.size() < kMaxWords) variable.array.push_back(std::move(word));
            }
        }
        if (conditional()) variable.array_known = false;
        variable.line = line;
        return;
    }
    std::vector<Word> value = expand(RawWord{std::string(text.substr(eq + 1)), raw.line, false, {}, 0, true});
    Word word = value.empty() ? Word{} : value.front();
    std::optional<std::string> known;
    auto it = variables.find(name);
    if (word.known) {
        std::string prefix;
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
    if (!known && word.pattern && !append && !conditional()) {
        if (auto set = variables.find(name); set != variables.end()) set->second.pattern = word.pattern;
    }
}

Variable Interpreter::prefix_variable(const RawWord& prefix, int line, const std::string& origin) {
    std::string name = prefix.raw.substr(0, prefix.raw.find('='));
    if (name.ends_with('+')) name.pop_back();
    auto saved =
        variables.find(name) == variables.end() ? std::nullopt : std::optional<Variable>(variables.find(name)->second);
    bool saved_allexport = allexport;
    assign(prefix, line, true, origin);
    Variable result = variables[name];
    result.exported = true;
    if (saved) {
        variables[name] = std::move(*saved);
    } else {
        variables.erase(name);
    }
    allexport = saved_allexport;
    return result;
}

Variables Interpreter::exported_variables() const {
    Variables out;
    for (const auto& [name, variable] : variables) {
        if (variable.exported) out.emplace(name, variable);
    }
    return out;
}

void Interpreter::open_source(int line, const std::string& construct) {
    std::string where = "line " + std::to_string(line) + ": " + construct;
    if (conditional()) where += " (" + condition_reason().substr(std::string_view("set ").size()) + ")";
    open_sources.push_back(where + " may set any variable");
}

// ---------------------------------------------------------------- commands

namespace {

bool is_assignment(const RawWord& word) {
    std::string_view text = word.raw;
    std::size_t eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    std::string_view name = text.substr(0, text[eq - 1] == '+' ? eq - 1 : eq);
    return is_name(name);
}

bool opens_test(std::string_view w) { return w == "[[" || w == "[" || w == "test" || w == "(("; }

bool opens_block(std::string_view w) {
    return w == "if" || w == "while" || w == "until" || w == "for" || w == "case" || w == "select" || w == "{";
}

}  // namespace

void Interpreter::run_command(const RawCommand& command) {
    const auto& words = command.words;
    // `a && b`, `a || b`: b runs as a's status says, which only a decided test tells.
    std::optional<bool> joined_runs = true;
    if (command.joint == RawCommand::Joint::and_then || command.joint == RawCommand::Joint::or_else) {
        joined_runs = last_status_;
        if (joined_runs && command.joint == RawCommand::Joint::or_else) joined_runs = !*joined_runs;
    }
    if (joined_runs == false && !(words.empty() == false && words.front().raw == "{")) {
        return;  // last_status_ stays: `false && a || b` runs b
    }
    last_status_.reset();
    // `test && { ...; }`: the block runs as the test says, up to its `}`.
    bool joined_brace = !words.empty() && words.front().raw == "{" && joined_runs != true;
    if (joined_brace) {
        open_block(Block::Kind::brace, command.line, joined_runs);
        if (skipping()) blocks_.back().runs = false;
    }
    bool joined_block = !joined_runs.has_value() && !joined_brace;
    std::size_t joined_at = blocks_.size();
    if (joined_block) open_block(Block::Kind::brace, command.line, std::nullopt);

    std::size_t first = 0;
    // Reserved words that open or close a block, or just precede a command.
    while (first < words.size()) {
        const std::string& w = words[first].raw;
        if (w == "if") {
            open_block(Block::Kind::if_block, command.line, skipping() ? std::optional<bool>(false) : std::nullopt);
            blocks_.back().condition = evaluate_test(words, first + 1);
            if (first + 1 < words.size() && opens_test(words[first + 1].raw)) {
                first = words.size();  // a test: nothing else to read
                break;
            }
        } else if (w == "elif" && !blocks_.empty() && blocks_.back().kind == Block::Kind::if_block) {
            Block& block = blocks_.back();
            if (block.runs == true) block.taken = true;
            if (!block.runs.has_value()) block.maybe_taken = true;
            block.runs = std::nullopt;  // the elif's own test runs only when the earlier ones failed
            if (block.taken) block.runs = false;
            block.condition = evaluate_test(words, first + 1);
            if (first + 1 < words.size() && opens_test(words[first + 1].raw)) {
                first = words.size();
                break;
            }
        } else if (w == "then" && !blocks_.empty() && blocks_.back().kind == Block::Kind::if_block) {
            Block& block = blocks_.back();
            bool outer_dead =
                std::any_of(blocks_.begin(), blocks_.end() - 1, [](const Block& b) { return b.runs == false; });
            if (outer_dead || block.taken || block.condition == false) {
                block.runs = false;
            } else if (block.condition == true && !block.maybe_taken) {
                block.runs = true;
            } else {
                block.runs = std::nullopt;
            }
        } else if (w == "else" && !blocks_.empty() && blocks_.back().kind == Block::Kind::if_block) {
            Block& block = blocks_.back();
            bool outer_dead =
                std::any_of(blocks_.begin(), blocks_.end() - 1, [](const Block& b) { return b.runs == false; });
            if (block.runs == true) block.taken = true;
            if (!block.runs.has_value()) block.maybe_taken = true;
            if (outer_dead || block.taken) {
                block.runs = false;
            } else {
                block.runs = block.maybe_taken ? std::nullopt : std::optional<bool>(true);
            }
        } else if (w == "while" || w == "until" || w == "for" || w == "select") {
            open_block(Block::Kind::loop, command.line, skipping() ? std::optional<bool>(false) : std::nullopt);
            if (w != "while" && w != "until") {
                first = words.size();  // `for x in ...`: the rest of the line is no command
                break;
            }
        } else if (w == "case") {
            open_block(Block::Kind::case_block, command.line, skipping() ? std::optional<bool>(false) : std::nullopt);
            first = words.size();
            break;
        } else if (w == "function" || (w.size() > 2 && w.ends_with("()"))) {
            open_block(Block::Kind::function, command.line, skipping() ? std::optional<bool>(false) : std::nullopt);
            blocks_.back().awaiting_body = first + 1 >= words.size() || words[first + 1].raw != "{";
            if (w == "function" && first + 2 < words.size() && words[first + 2].raw == "{") {
                blocks_.back().awaiting_body = false;
            }
            first = words.size();  // `f() { ...`: the body on this line is not followed
            break;
        } else if (w == "{") {
            if (joined_brace && first == 0) {
                // opened above, with the list's condition
            } else if (!blocks_.empty() && blocks_.back().awaiting_body) {
                blocks_.back().awaiting_body = false;
            } else {
                open_block(Block::Kind::brace, command.line, skipping() ? std::optional<bool>(false) : true);
            }
        } else if (w == "fi" || w == "done" || w == "esac" || w == "}") {
            close_block();
        } else if (opens_test(w)) {
            if (!skipping()) last_status_ = evaluate_test(words, first);
            first = words.size();  // a test: nothing else to read
            break;
        } else if (w == "time" && first + 1 < words.size() && opens_block(words[first + 1].raw)) {
            // `time { ...; }`, `time if ...`: the keyword before a block, not a wrapper.
        } else if (w != "do" && w != "!" && w != "then" && w != "else" && w != "elif") {
            break;  // `time` and `exec` are read as wrappers, with their options
        }
        ++first;
    }
    if (first < words.size() && !skipping()) {
        std::vector<const RawWord*> prefixes;
        while (first < words.size() && is_assignment(words[first])) prefixes.push_back(&words[first++]);
        // A builtin that only sets variables succeeds: `test && export A=x || export A=y` stays decided.
        bool succeeds = joined_runs.has_value();
        if (first >= words.size()) {
            for (const RawWord* p : prefixes) assign(*p, command.line, false, "line " + std::to_string(command.line));
        } else {
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
            } else if (name == "source" || name == ".") {
                open_source(command.line, name + (rest.empty() ? std::string() : " " + rest.front().raw));
            } else if (name == "eval") {
                open_source(command.line, "eval");
            } else if (name == "module" || name == "ml") {
                run_module(rest, command.line);
            } else if (name == "spack" && !rest.empty() && (rest.front().raw == "load" || rest.front().raw == "env")) {
                open_source(command.line, "spack " + rest.front().raw);
            } else if (name == "true" || name == "false") {
                if (succeeds) last_status_ = name == "true";
                succeeds = false;
            } else {
                succeeds = false;
                run_program(prefixes, first, command);
            }
            if (name == "source" || name == "." || name == "eval" || name == "module" || name == "ml" ||
                name == "spack") {
                succeeds = false;
            }
        }
        if (succeeds) last_status_ = true;
    }
    if (joined_block && blocks_.size() > joined_at)
        blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(joined_at));
}

// module load/add/swap/restore (Lmod, Environment Modules): the module files
// may set any variable. Listing and help change nothing.
void Interpreter::run_module(const std::vector<RawWord>& args, int line) {
    std::string sub = args.empty() ? "" : args.front().raw;
    static const std::vector<std::string_view> kQuiet = {"list",   "avail",   "spider", "help",   "show",
                                                         "whatis", "keyword", "-t",     "--terse"};
    if (!sub.empty() && std::find(kQuiet.begin(), kQuiet.end(), sub) != kQuiet.end()) return;
    std::string written = "module";
    for (std::size_t i = 0; i < args.size() && i < 3; ++i) written += " " + args[i].raw;
    if (args.size() > 3) written += " ...";
    open_source(line, written);
}

void Interpreter::record_prefixes(const std::vector<const RawWord*>& prefixes, int line) {
    for (const RawWord* prefix : prefixes) {
        std::string name = prefix->raw.substr(0, prefix->raw.find('='));
        if (name.ends_with('+')) name.pop_back();
        command_environment[name] = prefix_variable(*prefix, line, "line " + std::to_string(line) + ": " + prefix->raw);
    }
}

Interpreter::Expanded Interpreter::expand_command(const RawCommand& command, std::size_t first) {
    Expanded out;
    for (std::size_t i = first; i < command.words.size(); ++i) {
        for (auto& word : expand(command.words[i])) {
            if (out.words.size() >= kMaxWords) return out;
            out.words.push_back(std::move(word));
            out.sources.push_back(&command.words[i]);
        }
    }
    return out;
}

void Interpreter::run_program(const std::vector<const RawWord*>& prefixes, std::size_t first,
                              const RawCommand& command) {
    record_prefixes(prefixes, command.line);
    follow_program(expand_command(command, first).words, 0, command.line);
}

void Interpreter::follow_program(const std::vector<Word>& words, std::size_t from, int line) {
    auto wrapped = skip_wrappers(words, from);
    if (!wrapped) return;
    for (const auto& edit : wrapped->edits) {
        if (edit.kind == EnvEdit::Kind::set) {
            Variable& variable = command_environment[edit.name];
            variable = Variable{};
            if (edit.value.known) variable.value = edit.value.text;
            variable.pattern = edit.value.pattern;
            variable.why_unknown = edit.value.why_unknown;
            variable.exported = true;
            variable.line = line;
            variable.origin = "line " + std::to_string(line) + ": " + edit.wrapper + " " + edit.name + "=";
        } else if (edit.kind == EnvEdit::Kind::unknown) {
            open_source(line, edit.wrapper);
        }
    }
    auto at = shell_script_at(words, wrapped->program);
    if (!at) return;
    if (!words[*at].known) {
        note("line " + std::to_string(line) + ": the sh -c script here is computed at run time (" +
             words[*at].why_unknown + ")");
        open_source(line, "sh -c " + words[*at].why_unknown);
        return;
    }
    std::unique_ptr<Interpreter> inner = nested();
    inner->keep_patterns = keep_patterns;
    inner->variables = variables;
    for (const auto& [name, variable] : command_environment) inner->variables[name] = variable;
    for (auto& [name, variable] : inner->variables) variable.exported = false;
    if (!run_nested_script(*inner, words[*at].text, line, notes_)) return;
    for (auto& [name, variable] : inner->exported_variables()) command_environment[name] = variable;
    for (auto& [name, variable] : inner->command_environment) command_environment[name] = variable;
    for (auto& source : inner->open_sources) open_sources.push_back(std::move(source));
}

// unset [-v] NAME...: the variable is gone, from the script and from the
// commands after it (-f names functions, which the reader does not follow).
void Interpreter::run_unset(const std::vector<RawWord>& args, int line) {
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
        if (conditional()) {
            // Unset only when a condition holds: its value is no longer known.
            Variable& variable = variables[name];
            variable.value.reset();
            variable.pattern.reset();
            variable.array_known = false;
            variable.why_unknown = "unset on line " + std::to_string(line) + " " +
                                   condition_reason().substr(std::string_view("set ").size());
        } else {
            variables.erase(name);
        }
    }
}

void Interpreter::run_declaration(const std::string& keyword, const std::vector<RawWord>& args, int line) {
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
                // export NAME of a variable the script never set: the starting environment's value, unknown.
                it->second.why_unknown = "exported from the submitting shell";
                it->second.line = line;
                it->second.origin = origin;
                if (keep_patterns) it->second.pattern = "${" + arg.raw + "}";
            }
            it->second.exported = true;
        } else if (export_it && !is_name(arg.raw) && arg.raw.find_first_of("$`") != std::string::npos) {
            // export $(cat vars.env), export $VARS: names and values the job computes.
            auto expanded = expand(arg);
            bool known = !expanded.empty() && std::all_of(expanded.begin(), expanded.end(), [](const Word& w) {
                return w.known && is_name(w.text.substr(0, w.text.find('=')));
            });
            if (!known) open_source(line, keyword + " " + arg.raw);
        }
    }
}

// ---------------------------------------------------------------- nested shells

bool is_shell(std::string_view word) {
    std::string_view name = base_name(word);
    return name == "sh" || name == "bash" || name == "dash" || name == "zsh" || name == "ash" || name == "ksh";
}

std::optional<std::size_t> shell_script_at(const std::vector<Word>& words, std::size_t at) {
    if (at >= words.size() || !words[at].known || !is_shell(words[at].text)) return std::nullopt;
    for (std::size_t i = at + 1; i + 1 < words.size(); ++i) {
        const std::string& option = words[i].text;
        if (!words[i].known || option.size() < 2 || option.front() != '-' || option.starts_with("--")) {
            return std::nullopt;
        }
        if (option.find('c') != std::string::npos) return i + 1;
    }
    return std::nullopt;
}

bool run_nested_script(Interpreter& inner, std::string_view script, int line, std::vector<std::string>& notes) {
    if (inner.nesting() > kMaxNestedShells) {
        notes.push_back("line " + std::to_string(line) + ": bash -c nested too deep to follow");
        return false;
    }
    std::vector<std::string> inner_notes;
    inner.run(lex(script, line, inner_notes));
    for (auto& note : inner_notes) notes.push_back("bash -c: " + note);
    return true;
}

}  // namespace launchguard::shell
