// `launchguard enroot-hook`: run from /etc/enroot/hooks.d when a container
// starts. Checks that what the host has (topology file, /etc/nccl.conf
// values, NCCL variables) will be visible in the container, appends the
// environ and mount lines that fix it (patch, enforce) and exits non-zero in
// enforce mode for what it cannot fix, which aborts the container start.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/command.h"
#include "engine/profile_loader.h"
#include "probe/enroot_context.h"
#include "probe/environment_probe.h"
#include "probe/text_file.h"
#include "profile/profile.h"
#include "report/enroot_patch.h"
#include "report/text_report.h"
#include "rules/rule.h"
#include "util/text_escape.h"

namespace launchguard::cli {
namespace {

struct HookArgs {
    std::string profile;
    std::string mode;
    std::string host_root = "/";
    std::string hwloc_xml;
    std::string sysfs_root;
};

std::string env_or(const Environment& env, const char* name, const std::string& fallback) {
    auto it = env.find(name);
    return it == env.end() || it->second.empty() ? fallback : it->second;
}

// Appends text to a file in one write; returns the size before, for undo.
Result<off_t> append(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return make_file_error(path, 0, std::string("cannot open for appending: ") + std::strerror(errno));
    off_t before = ::lseek(fd, 0, SEEK_END);
    ssize_t written = ::write(fd, text.data(), text.size());
    int err = errno;
    ::close(fd);
    if (written != static_cast<ssize_t>(text.size())) {
        if (written > 0 && ::truncate(path.c_str(), before) != 0) {
            return make_file_error(path, 0, "partial write could not be undone: " + std::string(std::strerror(errno)));
        }
        return make_file_error(path, 0, std::string("cannot append: ") + std::strerror(err));
    }
    return before;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
}

// Both files change or neither does.
Status apply(const EnrootHookInputs& inputs, const EnrootPatch& patch) {
    Result<off_t> environ_before = off_t{-1};
    if (!patch.environ_lines.empty()) {
        environ_before = append(inputs.environ_file, joined(patch.environ_lines));
        if (!environ_before) return environ_before.error();
    }
    if (!patch.mount_lines.empty()) {
        auto mounts = append(inputs.mounts_file, joined(patch.mount_lines));
        if (!mounts) {
            if (*environ_before >= 0 && ::truncate(inputs.environ_file.c_str(), *environ_before) != 0) {
                return make_file_error(inputs.environ_file, 0,
                                       "could not undo the environment lines after: " + mounts.error().to_string());
            }
            return mounts.error();
        }
    }
    return Done{};
}

// What enroot prints when the hook runs: one line per finding and what the
// hook added, each prefixed so users can tell where it came from.
std::string hook_message(const Report& report, const EnrootPatch& patch) {
    std::string out;
    for (const auto& f : report.findings) {
        out += "launchguard: " + action_label(f.action) + " " + f.rule + ": " + printable_text(f.message) + "\n";
    }
    for (const auto& line : patch.environ_lines) {
        out += "launchguard: added to the container environment: " + printable_text(line) + "\n";
    }
    for (const auto& line : patch.mount_lines) out += "launchguard: added mount: " + printable_text(line) + "\n";
    if (report.decision == Decision::block) {
        out += "launchguard: container start blocked (profile " + printable_text(report.profile) + ", mode " +
               std::string(to_string(report.mode)) + "); see `launchguard explain <rule>`\n";
    }
    return out;
}

int run_hook(const HookArgs& args) {
    const Environment process_env = current_process_environment();
    const std::string profile_name =
        !args.profile.empty() ? args.profile : env_or(process_env, "LAUNCHGUARD_PROFILE", "default");
    const std::string mode_text = !args.mode.empty() ? args.mode : env_or(process_env, "LAUNCHGUARD_MODE", "enforce");
    auto mode = parse_mode(mode_text);
    if (!mode) return bad_input("enroot-hook: mode must be enforce, patch, warn or off, got '" + mode_text + "'");
    if (*mode == Mode::off) return kExitAllow;

    auto profile = load_profile(profile_name);
    if (!profile) return bad_input("enroot-hook: " + profile.error().to_string());
    auto inputs = enroot_inputs_from_environment(process_env);
    if (!inputs) return bad_input("enroot-hook: " + inputs.error().to_string());
    inputs->host_root = args.host_root;
    if (!args.hwloc_xml.empty()) inputs->hwloc_xml = args.hwloc_xml;
    if (!args.sysfs_root.empty()) inputs->sysfs_root = args.sysfs_root;

    auto context = build_enroot_context(*inputs);
    if (!context) return bad_input("enroot-hook: " + context.error().to_string());

    EvaluationOptions options;
    options.mode = *mode;
    options.scopes = kScopeLive;
    options.applicable = {RemediationOp::Kind::set_env, RemediationOp::Kind::mount_file};
    options.fix_blocking = true;
    Report report = evaluate(*context, *profile, options);

    auto environ_text = read_text_file(inputs->environ_file);
    auto mounts_text = read_text_file(inputs->mounts_file);
    if (!environ_text || !mounts_text) {
        return bad_input("enroot-hook: " + (environ_text ? mounts_text.error() : environ_text.error()).to_string());
    }
    // A blocked start is aborted by enroot: leave its files as they were.
    EnrootPatch patch;
    if (report.decision != Decision::block) patch = enroot_patch_for(report, *environ_text, *mounts_text);
    if (!patch.refused.empty()) {
        std::cerr << hook_message(report, EnrootPatch{});
        std::string reasons;
        for (const auto& why : patch.refused) reasons += (reasons.empty() ? "" : "; ") + why;
        return bad_input("enroot-hook: nothing applied: " + reasons);
    }
    if (!patch.empty()) {
        auto applied = apply(*inputs, patch);
        if (!applied) return bad_input("enroot-hook: " + applied.error().to_string());
    }

    std::cerr << hook_message(report, patch);
    return report.decision == Decision::block ? kExitBlock : kExitAllow;
}

}  // namespace

void add_enroot_hook_command(CLI::App& app, CommandRunner& runner) {
    auto args = std::make_shared<HookArgs>();
    CLI::App* cmd = app.add_subcommand("enroot-hook",
                                       "Run as an enroot hook (hooks.d): carry host NCCL settings into the container");
    cmd->add_option("--profile", args->profile, "Profile name or file (default: $LAUNCHGUARD_PROFILE, else default)");
    cmd->add_option("--mode", args->mode, "enforce, patch, warn or off (default: $LAUNCHGUARD_MODE, else enforce)");
    cmd->add_option("--host-root", args->host_root, "Host filesystem root (tests)")->check(CLI::ExistingDirectory);
    cmd->add_option("--hwloc-xml", args->hwloc_xml, "Node topology from an hwloc XML file");
    cmd->add_option("--sysfs-root", args->sysfs_root, "Node facts from this root")->check(CLI::ExistingDirectory);
    cmd->callback([&runner, args] { runner = [args] { return run_hook(*args); }; });
}

}  // namespace launchguard::cli
