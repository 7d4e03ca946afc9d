// The gate's command line, the same for `launchguard gate ...` and for the
// static `launchguard-gate ...`. Everything after the first `--` following
// `run` is the workload's argv and is never parsed.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "gate/gate.h"
#include "util/text_escape.h"

namespace launchguard {
namespace {

int usage_error(const std::string& message) {
    std::cerr << "launchguard: " << printable_text(message) << "\n";
    return kGateUsageExitCode;
}

// A `run` line the gate cannot parse while a workload follows it (a
// webhook newer than the gate image, say): the launch is one the gate could
// not judge, and the failure policy decides, read from the raw words.
int unparsable_run(const std::vector<std::string>& words, const std::vector<std::string>& workload,
                   const std::string& problem) {
    GateRunOptions fallback;
    for (std::size_t i = 0; i + 1 < words.size(); ++i) {
        if (words[i] == "--on-error" && words[i + 1] == "block") fallback.on_error = GateOnError::block;
        if (words[i] == "--termination-log") fallback.termination_log = words[i + 1];
    }
    for (const auto& w : words) {
        if (w == "--on-error=block") fallback.on_error = GateOnError::block;
        if (w.starts_with("--termination-log=")) fallback.termination_log = w.substr(18);
    }
    fallback.argv = workload;
    return run_gate_unjudged(fallback, "its command line does not parse: " + problem);
}

}  // namespace

int gate_main(int argc, char** argv) {
    const std::string program = argc > 0 && argv[0] != nullptr ? argv[0] : "launchguard-gate";
    // Split off the workload: the first `--` after `run`.
    std::vector<std::string> words;
    std::vector<std::string> workload;
    bool after_dashes = false;
    bool is_run = false;
    for (int i = 1; i < argc; ++i) {
        std::string word = argv[i] == nullptr ? std::string() : argv[i];
        if (after_dashes) {
            workload.push_back(std::move(word));
        } else if (is_run && word == "--") {
            after_dashes = true;
        } else {
            if (words.empty() && word == "run") is_run = true;
            words.push_back(std::move(word));
        }
    }

    CLI::App app{"Judge a container's launch, then run its command (allow, warn, patch) or refuse it (block)", program};
    app.require_subcommand(1);

    GateInstallOptions install;
    std::string install_yaml;
    std::string install_profile;
    CLI::App* install_cmd = app.add_subcommand(
        "install", "Copy this executable and a profile into DIR (an init container's shared volume)");
    install_cmd->add_option("--into", install.into, "Directory to install into")->required();
    auto* yaml_opt = install_cmd->add_option("--profile-yaml", install_yaml, "The profile's YAML text");
    auto* name_opt =
        install_cmd->add_option("--profile", install_profile, "An embedded profile's name (default: default)");
    yaml_opt->excludes(name_opt);

    GateRunOptions run;
    std::string mode = "enforce";
    std::string on_error = "allow";
    double timeout_seconds = 10;
    std::string root;
    std::string sysfs_root;
    std::string hwloc_xml;
    std::string cpus;
    CLI::App* run_cmd = app.add_subcommand("run", "Judge this container's launch, then exec the command after --");
    run_cmd->add_option("--profile", run.profile, "Profile YAML file or embedded profile name")->capture_default_str();
    run_cmd->add_option("--mode", mode, "enforce, patch, warn or off")
        ->check(CLI::IsMember({"enforce", "patch", "warn", "off"}))
        ->capture_default_str();
    run_cmd->add_option("--on-error", on_error, "When the gate cannot judge: allow (run anyway) or block")
        ->check(CLI::IsMember({"allow", "block"}))
        ->capture_default_str();
    run_cmd->add_option("--termination-log", run.termination_log, "Where a block's report goes (besides stderr)")
        ->capture_default_str();
    run_cmd->add_option("--timeout", timeout_seconds, "Seconds the judgement may take; then --on-error decides")
        ->check(CLI::Range(0.001, 86400.0))
        ->capture_default_str();
    run_cmd->add_flag("--check-only", run.check_only, "Judge and exit without a command (a postStart hook)");
    // A recorded launch instead of this container's (tests): not for users.
    run_cmd->add_option("--root", root)->group("");
    run_cmd->add_option("--sysfs-root", sysfs_root)->group("");
    run_cmd->add_option("--hwloc-xml", hwloc_xml)->group("");
    run_cmd->add_option("--cpus", cpus)->group("");

    std::vector<std::string> parse_words(words.rbegin(), words.rend());  // CLI11 takes them reversed
    try {
        app.parse(parse_words);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        if (is_run && !workload.empty()) return unparsable_run(words, workload, e.what());
        app.exit(e);
        return kGateUsageExitCode;
    }

    if (install_cmd->parsed()) {
        if (yaml_opt->count() > 0) install.profile_yaml = install_yaml;
        if (name_opt->count() > 0) install.profile_name = install_profile;
        auto done = install_gate(install);
        if (!done) return usage_error("install: " + done.error().to_string());
        return 0;
    }

    run.mode = *parse_mode(mode);
    run.on_error = on_error == "block" ? GateOnError::block : GateOnError::allow;
    run.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(timeout_seconds * 1000)));
    if (!root.empty()) run.root = root;
    if (!sysfs_root.empty()) run.sysfs_root = sysfs_root;
    if (!hwloc_xml.empty()) run.hwloc_xml = hwloc_xml;
    if (!cpus.empty()) run.cpus = cpus;
    run.argv = std::move(workload);
    if (run.check_only && !run.argv.empty()) return usage_error("run: --check-only takes no command after --");
    if (!run.check_only && run.argv.empty())
        return usage_error("run: give the command to run after -- (or --check-only)");
    return run_gate(run);
}

}  // namespace launchguard
