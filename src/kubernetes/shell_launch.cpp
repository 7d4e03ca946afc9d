#include "kubernetes/shell_launch.h"

#include <cctype>
#include <charconv>
#include <map>
#include <set>
#include <string_view>

namespace launchguard::kubernetes {
namespace {

struct Token {
    std::string text;
    bool expands = false;         // holds an unquoted or double-quoted '$' or a backquote
    bool literal_dollar = false;  // also a '$' that is not expanded ('$X', \$X): text cannot tell them apart
    std::string raw;              // as written, for evidence
};

using Command = std::vector<Token>;

bool is_separator_char(char c) { return c == ';' || c == '&' || c == '|' || c == '\n' || c == '(' || c == ')'; }

// Splits shell text into simple commands of words, honouring quotes,
// backslashes, line continuations and comments. Control operators end a
// command; nothing is expanded.
void tokenize(std::string_view text, std::vector<Command>& commands) {
    Command current;
    Token word;
    bool in_word = false;
    auto end_word = [&] {
        if (in_word) current.push_back(std::move(word));
        word = Token{};
        in_word = false;
    };
    auto end_command = [&] {
        end_word();
        if (!current.empty()) commands.push_back(std::move(current));
        current.clear();
    };
    std::vector<std::string> pending_heredocs;  // delimiters whose bodies start at the next line
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c == '\n' && !pending_heredocs.empty()) {
            // A here-document's body is data for a command, not commands.
            end_command();
            std::size_t line = i + 1;
            for (const auto& delimiter : pending_heredocs) {
                while (line < text.size()) {
                    std::size_t end = text.find('\n', line);
                    if (end == std::string_view::npos) end = text.size();
                    std::string_view body_line = text.substr(line, end - line);
                    std::size_t indent = body_line.find_first_not_of('\t');
                    body_line = indent == std::string_view::npos ? std::string_view() : body_line.substr(indent);
                    line = end + 1;
                    if (body_line == delimiter) break;
                }
            }
            pending_heredocs.clear();
            i = line - 1;
            continue;
        }
        if (c == '<' && !in_word && i + 1 < text.size() && text[i + 1] == '<' &&
            (i + 2 >= text.size() || text[i + 2] != '<')) {
            std::size_t at = i + 2;
            if (at < text.size() && text[at] == '-') ++at;
            while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
            std::string delimiter;
            while (at < text.size() && text[at] != ' ' && text[at] != '\t' && text[at] != '\n' && text[at] != ';') {
                if (text[at] != '\'' && text[at] != '"' && text[at] != '\\') delimiter += text[at];
                ++at;
            }
            if (!delimiter.empty()) pending_heredocs.push_back(delimiter);
            i = at - 1;
            continue;
        }
        if (c == '\\' && i + 1 < text.size()) {
            if (text[i + 1] == '\n') {
                ++i;
                continue;
            }
            word.text += text[i + 1];
            if (text[i + 1] == '$') word.literal_dollar = true;
            word.raw += text.substr(i, 2);
            in_word = true;
            ++i;
        } else if (c == '\'') {
            std::size_t close = text.find('\'', i + 1);
            if (close == std::string_view::npos) close = text.size();
            std::string_view quoted = text.substr(i + 1, close - i - 1);
            word.text += quoted;
            if (quoted.find('$') != std::string_view::npos) word.literal_dollar = true;
            word.raw += text.substr(i, close + 1 - i);
            in_word = true;
            i = close;
        } else if (c == '"') {
            std::size_t j = i + 1;
            for (; j < text.size() && text[j] != '"'; ++j) {
                if (text[j] == '\\' && j + 1 < text.size()) {
                    ++j;
                    if (text[j] == '$') word.literal_dollar = true;
                } else if (text[j] == '$' || text[j] == '`') {
                    word.expands = true;
                }
                word.text += text[j];
            }
            word.raw += text.substr(i, std::min(j + 1, text.size()) - i);
            in_word = true;
            i = j;
        } else if (c == '#' && !in_word) {
            while (i < text.size() && text[i] != '\n') ++i;
            end_command();
        } else if (c == ' ' || c == '\t' || c == '\r') {
            end_word();
        } else if (is_separator_char(c)) {
            end_command();
        } else {
            if (c == '$' || c == '`') word.expands = true;
            word.text += c;
            word.raw += c;
            in_word = true;
        }
    }
    end_command();
}

bool is_name(std::string_view text) {
    if (text.empty() || (text[0] >= '0' && text[0] <= '9')) return false;
    for (char c : text) {
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) return false;
    }
    return true;
}

// "NAME=value" -> {NAME, value}; nullopt when the word is not an assignment.
std::optional<ShellAssignment> assignment(const Token& token) {
    std::size_t eq = token.text.find('=');
    if (eq == std::string::npos || !is_name(std::string_view(token.text).substr(0, eq))) return std::nullopt;
    ShellAssignment result;
    result.name = token.text.substr(0, eq);
    if (!token.expands)
        result.value = token.text.substr(eq + 1);
    else if (!token.literal_dollar)
        result.pattern = token.text.substr(eq + 1);
    result.origin = token.raw;
    return result;
}

std::string_view basename(std::string_view path) {
    std::size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::optional<int> small_int(std::string_view text) {
    int value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value < 0) return std::nullopt;
    return value;
}

bool is_mpi_launcher(std::string_view word) {
    std::string_view name = basename(word);
    return name == "mpirun" || name == "mpiexec" || name == "orterun" || name == "mpiexec.hydra";
}

// Open MPI / MPICH options that take values, so that the scan stops at the
// program rather than at an option's argument.
int option_arity(std::string_view option) {
    static const std::set<std::string_view> kTwo = {"-mca", "--mca", "-gmca", "--gmca", "-genv", "-env"};
    static const std::set<std::string_view> kOne = {"-np",
                                                    "-n",
                                                    "--np",
                                                    "-c",
                                                    "-H",
                                                    "--host",
                                                    "-host",
                                                    "-hosts",
                                                    "-hostfile",
                                                    "--hostfile",
                                                    "-machinefile",
                                                    "--machinefile",
                                                    "-map-by",
                                                    "--map-by",
                                                    "-bind-to",
                                                    "--bind-to",
                                                    "-rank-by",
                                                    "--rank-by",
                                                    "-npernode",
                                                    "--npernode",
                                                    "-N",
                                                    "-ppn",
                                                    "-perhost",
                                                    "-wdir",
                                                    "--wdir",
                                                    "-prefix",
                                                    "--prefix",
                                                    "-x",
                                                    "-output-filename",
                                                    "--output-filename",
                                                    "-launcher",
                                                    "-bootstrap",
                                                    "-genvlist",
                                                    "--personality",
                                                    "-tune",
                                                    "-iface",
                                                    "-report-bindings-file"};
    if (kTwo.count(option) != 0) return 2;
    if (kOne.count(option) != 0) return 1;
    return 0;
}

void read_mpi_launcher(const Command& command, std::size_t start, ShellLaunch& launch) {
    launch.runs_mpi = true;
    for (std::size_t i = start + 1; i < command.size(); ++i) {
        const Token& token = command[i];
        if (token.text.empty() || token.text[0] != '-') break;  // the program: its own flags follow
        int arity = option_arity(token.text);
        if ((token.text == "-x") && i + 1 < command.size()) {
            const Token& value = command[i + 1];
            if (auto set = assignment(value)) {
                set->origin = "mpirun -x " + value.raw;
                launch.rank_exports.push_back(std::move(*set));
            } else if (is_name(value.text)) {
                launch.rank_exports.push_back({value.text, std::nullopt, true, std::nullopt, "mpirun -x " + value.raw});
            }
        } else if ((token.text == "-genv" || token.text == "-env") && i + 2 < command.size() &&
                   is_name(command[i + 1].text)) {
            const Token& value = command[i + 2];
            ShellAssignment set{command[i + 1].text, std::nullopt, false, std::nullopt,
                                token.text + " " + command[i + 1].raw + " " + value.raw};
            if (!value.expands)
                set.value = value.text;
            else if (!value.literal_dollar)
                set.pattern = value.text;
            launch.rank_exports.push_back(std::move(set));
        } else if ((token.text == "-np" || token.text == "-n" || token.text == "--np") && i + 1 < command.size()) {
            launch.mpi_ranks = small_int(command[i + 1].text);
        }
        i += static_cast<std::size_t>(arity);
    }
}

// torchrun / python -m torch.distributed.run flags: "--nnodes 2", "--nnodes=2".
void read_torchrun(const Command& command, std::size_t start, ShellLaunch& launch) {
    for (std::size_t i = start; i < command.size(); ++i) {
        std::string_view text = command[i].text;
        std::string_view option = text.substr(0, text.find('='));
        std::string_view value;
        if (text.find('=') != std::string_view::npos) {
            value = text.substr(text.find('=') + 1);
        } else if (i + 1 < command.size()) {
            value = command[i + 1].text;
        }
        if (option == "--nnodes") launch.torch_nnodes = small_int(value);
        if (option == "--nproc_per_node" || option == "--nproc-per-node")
            launch.torch_nproc_per_node = small_int(value);
        // The training script starts the program's own arguments.
        if (!text.empty() && text[0] != '-' && i > start && (text.ends_with(".py") || text == "-m")) break;
    }
}

std::optional<std::size_t> torchrun_start(const Command& command, std::size_t from) {
    for (std::size_t i = from; i < command.size(); ++i) {
        std::string_view word = basename(command[i].text);
        if (word == "torchrun") return i + 1;
        if (word == "-m" && i + 1 < command.size() &&
            (command[i + 1].text == "torch.distributed.run" || command[i + 1].text == "torch.distributed.launch")) {
            return i + 2;
        }
    }
    return std::nullopt;
}

void read_command(const Command& command, ShellLaunch& launch, std::map<std::string, ShellAssignment>& shell_vars) {
    std::size_t i = 0;
    std::vector<ShellAssignment> prefix;
    while (i < command.size()) {
        auto set = assignment(command[i]);
        if (!set) break;
        prefix.push_back(std::move(*set));
        ++i;
    }
    if (i == command.size()) {
        // Plain shell variables: children see them only once exported.
        for (auto& set : prefix) shell_vars[set.name] = std::move(set);
        return;
    }
    // Assignments in front of a command go to that command's environment,
    // which is the launch when the command starts it.
    for (auto& set : prefix) launch.exports.push_back(std::move(set));

    std::string_view word = command[i].text;
    if (word == "export" || word == "declare" || word == "typeset") {
        for (std::size_t j = i + 1; j < command.size(); ++j) {
            if (command[j].text.starts_with('-')) continue;
            if (auto set = assignment(command[j])) {
                set->origin = "export " + command[j].raw;
                launch.exports.push_back(std::move(*set));
            } else if (auto var = shell_vars.find(command[j].text); var != shell_vars.end()) {
                launch.exports.push_back(var->second);
            }
        }
        return;
    }
    if (word == "source" || word == ".") {
        if (i + 1 < command.size()) launch.sourced.push_back(command[i + 1].raw);
        return;
    }
    for (std::size_t j = i; j < command.size(); ++j) {
        if (is_mpi_launcher(command[j].text)) {
            read_mpi_launcher(command, j, launch);
            return;
        }
    }
    if (auto start = torchrun_start(command, i)) read_torchrun(command, *start, launch);
}

bool is_shell(std::string_view word) {
    std::string_view name = basename(word);
    return name == "sh" || name == "bash" || name == "dash" || name == "zsh" || name == "ash";
}

}  // namespace

std::optional<std::string> expand_variables(std::string_view pattern, const Environment& env) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '`') return std::nullopt;
        if (pattern[i] != '$') {
            out += pattern[i];
            continue;
        }
        std::string_view rest = pattern.substr(i + 1);
        std::size_t length = 0;
        std::string_view name;
        if (rest.starts_with('{')) {
            std::size_t close = rest.find('}');
            if (close == std::string_view::npos) return std::nullopt;
            name = rest.substr(1, close - 1);
            length = close + 1;
        } else {
            while (length < rest.size() &&
                   (std::isalnum(static_cast<unsigned char>(rest[length])) != 0 || rest[length] == '_')) {
                ++length;
            }
            name = rest.substr(0, length);
        }
        if (!is_name(name)) return std::nullopt;  // $(cmd), ${X:-y}, $1, $@
        auto it = env.find(name);
        if (it == env.end()) return std::nullopt;
        out += it->second;
        i += length;
    }
    return out;
}

ShellLaunch read_shell_launch(const std::vector<std::string>& command, const std::vector<std::string>& args) {
    std::vector<std::string> argv = command;
    argv.insert(argv.end(), args.begin(), args.end());

    std::vector<Command> commands;
    // `sh -c SCRIPT`: the script is shell text; any other argv is one command
    // whose words are already split.
    if (argv.size() >= 2 && is_shell(argv[0])) {
        for (std::size_t i = 1; i < argv.size(); ++i) {
            if (argv[i].starts_with('-') && argv[i].find('c') != std::string::npos && i + 1 < argv.size()) {
                tokenize(argv[i + 1], commands);
                break;
            }
        }
    } else if (!argv.empty()) {
        Command words;
        for (const auto& word : argv) {
            Token token{word, false, false, word};
            token.expands = word.find('$') != std::string::npos;
            words.push_back(std::move(token));
        }
        commands.push_back(std::move(words));
    }

    ShellLaunch launch;
    std::map<std::string, ShellAssignment> shell_vars;
    for (const auto& one : commands) read_command(one, launch, shell_vars);
    // A reference to a variable the script sets without exporting it is
    // resolved by the shell, not from the environment: leave it unknown.
    auto forget_shell_references = [&](std::vector<ShellAssignment>& list) {
        for (auto& set : list) {
            if (!set.pattern) continue;
            for (const auto& [name, var] : shell_vars) {
                if (set.pattern->find("$" + name) != std::string::npos ||
                    set.pattern->find("${" + name + "}") != std::string::npos) {
                    set.pattern.reset();
                    break;
                }
            }
        }
    };
    forget_shell_references(launch.exports);
    forget_shell_references(launch.rank_exports);
    return launch;
}

}  // namespace launchguard::kubernetes
