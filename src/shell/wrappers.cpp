#include "shell/wrappers.h"

#include <algorithm>
#include <array>
#include <initializer_list>

namespace launchguard::shell {
namespace {

bool is_option_word(const Word& word) { return word.known && word.text.size() > 1 && word.text.front() == '-'; }

// NAME=VALUE as env and sudo take it before the command.
std::optional<EnvEdit> env_assignment(const Word& word, const std::string& wrapper) {
    std::size_t eq = word.text.find('=');
    if (eq == std::string::npos || eq == 0 || !is_name(std::string_view(word.text).substr(0, eq))) return std::nullopt;
    EnvEdit edit{EnvEdit::Kind::set, word.text.substr(0, eq), word, wrapper};
    edit.value.text = word.text.substr(eq + 1);
    if (edit.value.pattern) edit.value.pattern = edit.value.pattern->substr(edit.value.pattern->find('=') + 1);
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

}  // namespace

bool is_wrapper(std::string_view name) {
    static constexpr std::array<std::string_view, 9> kWrappers = {"env",  "timeout", "nohup", "command", "stdbuf",
                                                                  "nice", "time",    "exec",  "sudo"};
    return std::find(kWrappers.begin(), kWrappers.end(), name) != kWrappers.end();
}

bool is_plain_utility(std::string_view name) {
    static constexpr std::array<std::string_view, 66> kUtilities = {
        "rm",       "mkdir",   "rmdir",    "cp",          "mv",     "ln",     "touch",    "chmod",  "chown",
        "chgrp",    "cat",     "ls",       "echo",        "printf", "true",   "false",    "sleep",  "hostname",
        "date",     "pwd",     "cd",       "uname",       "whoami", "id",     "df",       "du",     "free",
        "sync",     "tee",     "head",     "tail",        "wc",     "sort",   "uniq",     "grep",   "sed",
        "tar",      "gzip",    "gunzip",   "rsync",       "scp",    "curl",   "wget",     "find",   "stat",
        "realpath", "dirname", "basename", "kill",        "pkill",  "ps",     "test",     "[",      "nvidia-smi",
        "lscpu",    "lspci",   "ibstat",   "ibv_devinfo", "ulimit", "mktemp", "readlink", "md5sum", "strings",
        "tr",       "cut",     "awk"};
    return std::find(kUtilities.begin(), kUtilities.end(), base_name(name)) != kUtilities.end();
}

namespace {

// The first word of each $(...) in `text`.
bool substitutions_run_only_utilities(std::string_view text) {
    for (std::size_t at = text.find("$("); at != std::string_view::npos; at = text.find("$(", at + 2)) {
        std::size_t begin = text.find_first_not_of(" \t", at + 2);
        if (begin == std::string_view::npos) return false;
        std::size_t end = text.find_first_of(" \t)|;&", begin);
        if (!is_plain_utility(text.substr(begin, end == std::string_view::npos ? end : end - begin))) return false;
    }
    return text.find('`') == std::string_view::npos;
}

}  // namespace

bool runs_only_utilities(std::string_view script) {
    std::vector<std::string> notes;
    auto commands = lex(script, 1, notes);
    if (!notes.empty()) return false;
    bool any = false;
    for (const auto& command : commands) {
        if (command.kind != RawCommand::Kind::simple) continue;
        std::size_t first = 0;
        while (first < command.words.size() && command.words[first].raw.find('=') != std::string::npos &&
               is_name(std::string_view(command.words[first].raw).substr(0, command.words[first].raw.find('=')))) {
            ++first;  // NAME=value in front of the command
        }
        for (const auto& word : command.words) {
            if (!substitutions_run_only_utilities(word.raw)) return false;
        }
        any = true;  // assignments alone run only their substitutions, checked above
        if (first >= command.words.size()) continue;
        if (!is_plain_utility(command.words[first].raw)) return false;
    }
    return any;
}

std::optional<Wrapped> skip_wrappers(const std::vector<Word>& words, std::size_t i) {
    Wrapped start;
    while (i < words.size()) {
        const Word& word = words[i];
        std::string_view name = base_name(word.text);
        if (!word.known || !is_wrapper(name)) {
            start.program = i;
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
        }
    }
    start.program = words.size();
    return start;
}

}  // namespace launchguard::shell
