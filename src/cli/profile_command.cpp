// `launchguard profile validate FILE`, `launchguard profile compile FILE` and
// `launchguard profile list`.
#include <iostream>

#include "cli/command.h"
#include "engine/profile_loader.h"
#include "profile/profile.h"
#include "util/atomic_file.h"
#include "util/text_escape.h"

namespace launchguard::cli {

void add_profile_command(CLI::App& app, CommandRunner& runner) {
    CLI::App* cmd = app.add_subcommand("profile", "Validate and list profiles");
    cmd->require_subcommand(1);

    auto file = std::make_shared<std::string>();
    CLI::App* validate = cmd->add_subcommand("validate", "Validate a profile file against the schema");
    validate->add_option("file", *file, "Profile YAML file or embedded profile name")->required();
    validate->callback([&runner, file] {
        runner = [file] {
            auto profile = load_profile(*file);
            if (!profile) return bad_input(profile.error().to_string());
            // The name is the file's own text: escape it for the terminal.
            std::cout << printable_text(profile->origin) << ": profile '" << printable_text(profile->name)
                      << "' is valid (" << profile->actions.size() << " rule override(s))\n";
            return kExitAllow;
        };
    });

    // The Slurm task checks read profiles in this form, which needs no YAML
    // library (docs/slurm.md, "Site profiles").
    auto source = std::make_shared<std::string>();
    auto output = std::make_shared<std::string>();
    CLI::App* compile = cmd->add_subcommand("compile", "Validate a profile and write its compiled (JSON) form");
    compile->add_option("profile", *source, "Profile YAML file or embedded profile name")->required();
    compile->add_option("-o,--output", *output, "Write to this file (atomically, mode 0644) instead of stdout");
    compile->callback([&runner, source, output] {
        runner = [source, output] {
            auto profile = load_profile(*source);
            if (!profile) return bad_input(profile.error().to_string());
            const std::string json = profile_to_json(*profile);
            if (output->empty()) {
                std::cout << json;
                return kExitAllow;
            }
            if (auto written = write_file_atomically(*output, json, 0644); !written) {
                return bad_input(written.error().to_string());
            }
            return kExitAllow;
        };
    });

    CLI::App* list = cmd->add_subcommand("list", "List the embedded profiles");
    list->callback([&runner] {
        runner = [] {
            for (const auto& name : embedded_profile_names()) {
                auto profile = load_profile(name);
                std::cout << name << "\t" << (profile ? profile->description : profile.error().to_string()) << "\n";
            }
            return kExitAllow;
        };
    });
}

}  // namespace launchguard::cli
