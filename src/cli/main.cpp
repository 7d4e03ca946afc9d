// The launchguard executable: a thin adapter that parses arguments, calls the
// core, prints, and maps decisions to exit codes.
#include <csignal>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"

namespace {

// Slurm runs HealthCheckProgram without arguments, so the installed link
// launchguard-node-check stands for `launchguard node-check --slurm`.
constexpr std::string_view kHealthCheckProgramName = "launchguard-node-check";

std::string_view program_name(const char* argv0) {
    std::string_view name(argv0 == nullptr ? "" : argv0);
    auto slash = name.rfind('/');
    return slash == std::string_view::npos ? name : name.substr(slash + 1);
}

// No option or argument means anything when given as "": for a path it was
// taken as "not given" (`-o ''` wrote to stdout, `--metrics-file ''` wrote
// nothing) and the command succeeded. The name of the first option of the
// chosen subcommands given an empty value, if any.
std::optional<std::string> option_given_empty(const CLI::App& app) {
    for (const CLI::Option* option : app.get_options()) {
        if (option->get_type_size_max() == 0) continue;  // a flag: no value
        for (const std::string& value : option->results()) {
            if (value.empty()) return option->get_name(false, true);
        }
    }
    for (const CLI::App* sub : app.get_subcommands()) {
        if (auto name = option_given_empty(*sub)) return name;
    }
    return std::nullopt;
}

std::string empty_value_message(std::string_view option) {
    return std::string(option) + ": empty value (leave the option out, or give it a value)";
}

}  // namespace

int main(int argc, char** argv) {
    using namespace launchguard::cli;
    // A reader that goes away (`launchguard rules | head -1`) must not end the
    // process with SIGPIPE (exit 141): the write fails with EPIPE instead and
    // finish_output turns it into exit 2 with a message. Programs launchguard
    // runs get the default back (util/child_process.h).
    std::signal(SIGPIPE, SIG_IGN);
    std::vector<char*> health_check_argv;
    if (argc >= 1 && program_name(argv[0]) == kHealthCheckProgramName) {
        static char node_check[] = "node-check";
        static char slurm[] = "--slurm";
        health_check_argv = {argv[0], node_check, slurm};
        for (int i = 1; i < argc; ++i) health_check_argv.push_back(argv[i]);
        health_check_argv.push_back(nullptr);
        argc = static_cast<int>(health_check_argv.size()) - 1;
        argv = health_check_argv.data();
    }
    CLI::App app{"launchguard: check a GPU job launch against the cluster's reference profile", "launchguard"};
    app.set_version_flag("--version", "launchguard " LAUNCHGUARD_VERSION);
    app.require_subcommand(1);

    CommandRunner runner;
    add_check_command(app, runner);
    add_rules_command(app, runner);
    add_explain_command(app, runner);
    add_topo_command(app, runner);
    add_profile_command(app, runner);
    add_enroot_hook_command(app, runner);
    add_review_command(app, runner);
    add_node_check_command(app, runner);
    add_gather_command(app, runner);
    add_fleet_command(app, runner);
    add_gate_command(app, runner);

    // CLI11 reads "--gpus=" as the flag without its value and then takes the
    // next argument as the value ("--gpus= --format json" would judge GPU
    // "--format"). An explicitly empty value is a usage error instead.
    for (int i = 1; i < argc; ++i) {
        std::string_view arg(argv[i]);
        if (arg == "--") break;
        if (arg.starts_with("--") && arg.ends_with("=")) {
            return bad_input(empty_value_message(arg));
        }
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return finish_output(app.exit(e));
    } catch (const CLI::CallForAllHelp& e) {
        return finish_output(app.exit(e));
    } catch (const CLI::CallForVersion& e) {
        return finish_output(app.exit(e));
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return kExitBadInput;
    }
    if (auto option = option_given_empty(app)) return bad_input(empty_value_message(*option));
    try {
        return runner ? finish_output(runner()) : kExitBadInput;
    } catch (const std::exception& e) {
        // Every command returns errors as values; this is the last guard.
        return bad_input(std::string("internal error: ") + e.what());
    }
}
