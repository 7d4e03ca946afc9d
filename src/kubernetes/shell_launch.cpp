#include "kubernetes/shell_launch.h"

#include <charconv>
#include <memory>
#include <string_view>
#include <utility>

#include "shell/interpreter.h"
#include "shell/lexer.h"
#include "shell/mpi_launcher.h"
#include "shell/wrappers.h"

namespace launchguard::kubernetes {
namespace {

using shell::Word;

std::optional<int> small_int(std::string_view text) {
    int value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value < 0) return std::nullopt;
    return value;
}

// A value word as a launcher takes it: known, a pattern over the
// environment it starts in, or unknown.
ShellAssignment launcher_value(std::string name, const Word& value, std::string origin) {
    ShellAssignment set{std::move(name), std::nullopt, false, std::nullopt, std::move(origin), {}};
    if (value.known) {
        set.value = value.text;
    } else {
        set.pattern = value.pattern;
        set.why_unknown = value.why_unknown;
    }
    return set;
}

// The words of one command after expansion, with what each was written as.
struct Words {
    std::vector<Word> words;
    std::vector<std::string> raw;
};

// What the launcher at words[start] passes its ranks, and how many it
// starts. `place` says where its options end, given the index of the word
// that ends them (nullopt: no place).
template <typename Place>
void read_mpi_launcher(const Words& command, std::size_t start, ShellLaunch& launch, Place&& place) {
    auto mpi = shell::read_mpi_launcher(command.words, start);
    if (!mpi) return;
    launch.runs_mpi = true;
    ++launch.mpi_launches;
    launch.mpi_place.reset();
    if (launch.mpi_launches == 1 && mpi->complete) {
        if (auto where = place(*mpi)) launch.mpi_place = MpiOptionsPlace{*mpi, where->first, where->second};
    }
    if (mpi->ranks) launch.mpi_ranks = mpi->ranks;
    for (const auto& edit : mpi->edits) {
        std::string origin = mpi->launcher + " " + edit.written;
        if (edit.kind == shell::RankEnvEdit::Kind::set) {
            launch.rank_exports.push_back(launcher_value(edit.name, edit.value, origin));
        } else if (edit.kind == shell::RankEnvEdit::Kind::forward) {
            launch.rank_exports.push_back({edit.name, std::nullopt, true, std::nullopt, origin, {}});
        }
    }
}

// torchrun / python -m torch.distributed.run flags: "--nnodes 2", "--nnodes=2".
void read_torchrun(const std::vector<Word>& words, std::size_t start, ShellLaunch& launch) {
    for (std::size_t i = start; i < words.size(); ++i) {
        std::string_view text = words[i].text;
        std::string_view option = text.substr(0, text.find('='));
        std::string_view value;
        bool known = words[i].known;
        if (text.find('=') != std::string_view::npos) {
            value = text.substr(text.find('=') + 1);
        } else if (i + 1 < words.size()) {
            value = words[i + 1].text;
            known = words[i + 1].known;
        }
        if (option == "--nnodes") launch.torch_nnodes = known ? small_int(value) : std::nullopt;
        if (option == "--nproc_per_node" || option == "--nproc-per-node")
            launch.torch_nproc_per_node = known ? small_int(value) : std::nullopt;
        // The training script starts the program's own arguments.
        if (!text.empty() && text[0] != '-' && i > start && (text.ends_with(".py") || text == "-m")) break;
    }
}

std::optional<std::size_t> torchrun_start(const std::vector<Word>& words) {
    for (std::size_t i = 0; i < words.size(); ++i) {
        std::string_view word = shell::base_name(words[i].text);
        if (word == "torchrun") return i + 1;
        if (word == "-m" && i + 1 < words.size() &&
            (words[i + 1].text == "torch.distributed.run" || words[i + 1].text == "torch.distributed.launch")) {
            return i + 2;
        }
    }
    return std::nullopt;
}

// A container's shell, with the launchers it runs read for what they pass
// their ranks and the job's shape.
class ContainerShell : public shell::Interpreter {
public:
    ContainerShell(ShellLaunch& launch, std::vector<std::string>& notes, int nesting)
        : Interpreter(notes, nesting), launch_(launch), notes_out_(notes) {
        keep_patterns = true;
    }

    // One command whose words are already split (a container's argv).
    void read_words(const Words& command) {
        if (auto wrapped = shell::skip_wrappers(command.words, 0)) {
            script_word_ = shell::shell_script_at(command.words, wrapped->program);
            if (script_word_) script_text_ = command.words[*script_word_].text;
        }
        follow_program(command.words, 0, 1);
        read_launchers(command, [](const shell::MpiLaunch& mpi) {
            return std::optional<Place>(Place{mpi.options_end, std::nullopt});
        });
    }

protected:
    void run_program(const std::vector<const shell::RawWord*>& prefixes, std::size_t first,
                     const shell::RawCommand& command) override {
        record_prefixes(prefixes, command.line);
        Expanded expanded = expand_command(command, first);
        Words words;
        for (const auto* source : expanded.sources) words.raw.push_back(source->raw);
        words.words = std::move(expanded.words);
        follow_program(words.words, 0, command.line);
        // A launcher in the argv's own `sh -c` script: its options end
        // where the word before its program ends in the script's text, a
        // place only where an added word stands on its own.
        read_launchers(words, [&](const shell::MpiLaunch& mpi) {
            if (!script_word_ || nesting() != 1 || mpi.options_end == 0) return std::optional<Place>();
            const std::size_t end = expanded.sources[mpi.options_end - 1]->end;
            if (!shell::word_may_be_added_at(script_text_, end)) return std::optional<Place>();
            return std::optional<Place>(Place{*script_word_, end});
        });
    }

    std::unique_ptr<Interpreter> nested() override {
        auto inner = std::make_unique<ContainerShell>(launch_, notes_out_, nesting() + 1);
        if (nesting() == 0) {
            inner->script_word_ = script_word_;
            inner->script_text_ = script_text_;
        }
        return inner;
    }

private:
    using Place = std::pair<std::size_t, std::optional<std::size_t>>;

    template <typename PlaceOf>
    void read_launchers(const Words& command, PlaceOf&& place) {
        for (std::size_t j = 0; j < command.words.size(); ++j) {
            if (command.words[j].known && shell::is_mpi_launcher(command.words[j].text)) {
                read_mpi_launcher(command, j, launch_, place);
                return;
            }
        }
        if (auto start = torchrun_start(command.words)) read_torchrun(command.words, *start, launch_);
    }

    ShellLaunch& launch_;
    std::vector<std::string>& notes_out_;
    // The argv word that holds the `sh -c` script the root runs.
    std::optional<std::size_t> script_word_;
    std::string script_text_;
};

}  // namespace

ShellLaunch read_shell_launch(const std::vector<std::string>& command, const std::vector<std::string>& args) {
    // The kubelet runs command and args without a shell: each is one word,
    // taken as written ($X means something only to a shell it starts).
    Words argv;
    for (const auto* list : {&command, &args}) {
        for (const auto& text : *list) {
            argv.words.push_back(Word{text, true, {}, std::nullopt, {}});
            argv.raw.push_back(text);
        }
    }
    ShellLaunch launch;
    ContainerShell root(launch, launch.notes, 0);
    root.read_words(argv);
    for (const auto& [name, variable] : root.command_environment) {
        launch.exports.push_back(
            {name, variable.value, false, variable.pattern, variable.origin, variable.why_unknown});
    }
    launch.open_sources = root.open_sources;
    return launch;
}

}  // namespace launchguard::kubernetes
