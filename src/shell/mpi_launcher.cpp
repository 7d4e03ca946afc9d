#include "shell/mpi_launcher.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "util/text.h"

namespace launchguard::shell {
namespace {

// Options that take two words (--mca KEY VALUE, -genv NAME VALUE) and one
// word; any other option is a flag. An option written --name=value takes none.
constexpr std::array<std::string_view, 12> kTwoWords = {"-mca",      "--mca",    "-gmca",     "--gmca",
                                                        "--pmixmca", "-pmixmca", "--prtemca", "-prtemca",
                                                        "--omca",    "-omca",    "-genv",     "-env"};
constexpr std::array<std::string_view, 56> kOneWord = {"-np",
                                                       "-n",
                                                       "--np",
                                                       "--n",
                                                       "-c",
                                                       "-H",
                                                       "--host",
                                                       "-host",
                                                       "-hosts",
                                                       "-hostfile",
                                                       "--hostfile",
                                                       "-machinefile",
                                                       "--machinefile",
                                                       "-f",
                                                       "--default-hostfile",
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
                                                       "-wd",
                                                       "-prefix",
                                                       "--prefix",
                                                       "-x",
                                                       "-output-filename",
                                                       "--output-filename",
                                                       "-launcher",
                                                       "-bootstrap",
                                                       "-launcher-exec",
                                                       "-bootstrap-exec",
                                                       "-genvlist",
                                                       "-envlist",
                                                       "-genvexcl",
                                                       "-envexcl",
                                                       "--personality",
                                                       "-tune",
                                                       "-iface",
                                                       "-rmk",
                                                       "-configfile",
                                                       "--rankfile",
                                                       "-rf",
                                                       "-am",
                                                       "--am",
                                                       "--tmpdir",
                                                       "--timeout",
                                                       "-path",
                                                       "-gtool",
                                                       "--display"};
// Options only Hydra has: a launcher named mpirun that takes one is Hydra's.
constexpr std::array<std::string_view, 16> kHydraOnly = {
    "-genv",     "-env",     "-genvlist", "-envlist", "-genvnone", "-envnone", "-genvall",   "-envall",
    "-genvexcl", "-envexcl", "-ppn",      "-perhost", "-hosts",    "-f",       "-bootstrap", "-iface"};

template <std::size_t N>
bool among(const std::array<std::string_view, N>& list, std::string_view option) {
    return std::find(list.begin(), list.end(), option) != list.end();
}

std::optional<int> count(std::string_view text) {
    int value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value < 0) return std::nullopt;
    return value;
}

// -x NAME=VALUE or -x NAME.
void read_export(const Word& value, MpiLaunch& launch) {
    std::size_t eq = value.text.find('=');
    std::string written = "-x " + (value.known ? value.text : value.why_unknown);
    if (eq != std::string::npos && is_name(std::string_view(value.text).substr(0, eq))) {
        Word rest = value;
        rest.text = value.text.substr(eq + 1);
        if (rest.pattern) rest.pattern = rest.pattern->substr(rest.pattern->find('=') + 1);
        launch.edits.push_back({RankEnvEdit::Kind::set, value.text.substr(0, eq), std::move(rest), written});
    } else if (value.known && is_name(value.text)) {
        launch.edits.push_back({RankEnvEdit::Kind::forward, value.text, {}, written});
    }
}

// -genvlist A,B / -genvexcl A,B.
void read_name_list(const Word& value, RankEnvEdit::Kind kind, const std::string& option, MpiLaunch& launch) {
    if (!value.known) return;
    for (const auto& name : split_list(value.text, ',')) {
        if (is_name(name)) launch.edits.push_back({kind, name, {}, option + " " + value.text});
    }
}

void read_shape(std::string_view option, const Word& value, MpiLaunch& launch) {
    std::string_view text = value.text;
    bool told = true;
    if (option == "-np" || option == "-n" || option == "--np" || option == "--n" || option == "-c") {
        launch.ranks = value.known ? count(text) : std::nullopt;
    } else if (option == "-N" || option == "-npernode" || option == "--npernode" || option == "-ppn" ||
               option == "-perhost") {
        launch.ranks_per_node = value.known ? count(text) : std::nullopt;
    } else if (option == "--map-by" || option == "-map-by") {
        // ppr:N:node[:modifiers]: N ranks on each node.
        told = value.known && text.starts_with("ppr:");
        if (told) {
            std::string_view rest = text.substr(4);
            std::size_t colon = rest.find(':');
            if (colon != std::string_view::npos && rest.substr(colon + 1).starts_with("node")) {
                launch.ranks_per_node = count(rest.substr(0, colon));
            } else {
                told = false;
            }
        }
    } else if (option == "-H" || option == "--host" || option == "-host" || option == "-hosts") {
        if (value.known) {
            std::vector<std::string> hosts;
            for (auto& host : split_list(text, ',')) {
                host = host.substr(0, host.find(':'));  // "node1:8" names node1 with 8 slots
                if (!host.empty() && std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
            }
            launch.hosts = static_cast<int>(hosts.size());
        } else {
            launch.hosts.reset();
            launch.hostfile = true;  // hosts the job computes: as unknown as a file's
        }
    } else if (option == "-hostfile" || option == "--hostfile" || option == "-machinefile" ||
               option == "--machinefile" || option == "-f" || option == "--default-hostfile") {
        launch.hostfile = true;
    } else {
        told = false;
    }
    if (told)
        launch.shape_options.push_back(std::string(option) + " " + (value.known ? value.text : value.why_unknown));
}

}  // namespace

bool is_mpi_launcher(std::string_view word) {
    std::string_view name = base_name(word);
    return name == "mpirun" || name == "mpiexec" || name == "mpiexec.hydra" || name == "orterun" || name == "prterun";
}

std::optional<MpiLaunch> read_mpi_launcher(const std::vector<Word>& words, std::size_t at) {
    if (at >= words.size() || !words[at].known || !is_mpi_launcher(words[at].text)) return std::nullopt;
    MpiLaunch launch;
    launch.launcher = std::string(base_name(words[at].text));
    launch.hydra = launch.launcher == "mpiexec.hydra";
    std::size_t i = at + 1;
    while (i < words.size()) {
        const Word& word = words[i];
        if (!word.known || word.text.size() < 2 || word.text.front() != '-') break;
        if (word.text == "--") {
            launch.options_end = i;
            ++i;
            break;
        }
        ++i;
        std::string_view option = word.text;
        std::optional<Word> inline_value;
        if (option.starts_with("--") && option.find('=') != std::string_view::npos) {
            Word value = word;
            value.text = word.text.substr(word.text.find('=') + 1);
            inline_value = std::move(value);
            option = option.substr(0, option.find('='));
        }
        if (among(kHydraOnly, option)) launch.hydra = true;
        if (option == "-genvnone" || option == "-envnone") {
            launch.edits.push_back({RankEnvEdit::Kind::clear, "", {}, std::string(option)});
            continue;
        }
        if (among(kTwoWords, option)) {
            if (i + 1 < words.size() && (option == "-genv" || option == "-env") && words[i].known &&
                is_name(words[i].text)) {
                launch.edits.push_back({RankEnvEdit::Kind::set, words[i].text, words[i + 1],
                                        std::string(option) + " " + words[i].text + " " +
                                            (words[i + 1].known ? words[i + 1].text : words[i + 1].why_unknown)});
            }
            i += 2;
            if (i > words.size()) launch.complete = false;
            continue;
        }
        if (!among(kOneWord, option)) continue;  // a flag
        const Word* value = inline_value ? &*inline_value : (i < words.size() ? &words[i] : nullptr);
        if (!inline_value) ++i;
        if (value == nullptr) {
            launch.complete = false;
            break;
        }
        if (option == "-x") {
            read_export(*value, launch);
        } else if (option == "-genvlist" || option == "-envlist") {
            read_name_list(*value, RankEnvEdit::Kind::forward, std::string(option), launch);
        } else if (option == "-genvexcl" || option == "-envexcl") {
            read_name_list(*value, RankEnvEdit::Kind::unset, std::string(option), launch);
        } else {
            read_shape(option, *value, launch);
        }
    }
    launch.program = std::min(i, words.size());
    if (launch.options_end == 0) launch.options_end = launch.program;
    return launch;
}

std::vector<std::string> rank_env_words(const MpiLaunch& launch, const std::string& name, const std::string& value) {
    if (launch.hydra) return {"-genv", name, value};
    return {"-x", name + "=" + value};
}

std::string rank_env_option(const MpiLaunch& launch, const std::string& name, const std::string& quoted_value) {
    std::string option;
    for (const auto& word : rank_env_words(launch, name, quoted_value)) option += (option.empty() ? "" : " ") + word;
    return option;
}

std::string rank_env_written(const MpiLaunch& launch, const std::string& name) {
    for (const auto& edit : launch.edits) {
        if (edit.kind == RankEnvEdit::Kind::set && edit.name == name) return edit.written;
    }
    return "";
}

}  // namespace launchguard::shell
