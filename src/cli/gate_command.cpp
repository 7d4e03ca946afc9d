// `launchguard gate install|run ...`: the launch gate's command line
// (gate/gate.h), for dry runs where the CLI is installed. The container runs
// the static launchguard-gate, which parses the same words.
#include <string>
#include <vector>

#include "cli/command.h"
#include "gate/gate.h"

namespace launchguard::cli {

void add_gate_command(CLI::App& app, CommandRunner& runner) {
    CLI::App* cmd = app.add_subcommand(
        "gate", "The Kubernetes launch gate: `gate install --into DIR`, `gate run [options] -- COMMAND...`");
    // Everything after `gate` goes to the gate's own parser unread.
    cmd->prefix_command();
    cmd->set_help_flag();
    cmd->callback([&runner, cmd] {
        runner = [cmd] {
            std::vector<std::string> words = cmd->remaining();
            std::string program = "launchguard gate";
            std::vector<char*> argv{program.data()};
            for (auto& w : words) argv.push_back(w.data());
            argv.push_back(nullptr);
            return gate_main(static_cast<int>(argv.size()) - 1, argv.data());
        };
    });
}

}  // namespace launchguard::cli
