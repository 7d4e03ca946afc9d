// The launchguard executable: a thin adapter that parses arguments, calls the
// core, prints, and maps decisions to exit codes.
#include <exception>
#include <iostream>

#include "cli/command.h"

int main(int argc, char** argv) {
    using namespace launchguard::cli;
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

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return kExitBadInput;
    }
    try {
        return runner ? runner() : kExitBadInput;
    } catch (const std::exception& e) {
        // Every command returns errors as values; this is the last guard.
        return bad_input(std::string("internal error: ") + e.what());
    }
}
