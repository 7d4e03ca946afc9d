#include "probe/enroot_context.h"

#include <algorithm>
#include <filesystem>

#include "probe/context_builder.h"
#include "probe/enroot_view.h"
#include "probe/rooted_file_view.h"
#include "probe/text_file.h"

namespace launchguard {
namespace {

std::optional<std::string> lookup(const Environment& env, const char* name) {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) return std::nullopt;
    return it->second;
}

bool started_by_pyxis(const Environment& host_env) {
    return host_env.count("PYXIS_VERSION") != 0 || host_env.count("PYXIS_RUNTIME_PATH") != 0;
}

Result<std::vector<EnrootMount>> read_fstab(const std::string& path) {
    auto text = read_text_file(path);
    if (!text) return text.error();
    return parse_enroot_fstab(*text, path);
}

}  // namespace

Result<EnrootHookInputs> enroot_inputs_from_environment(const Environment& env) {
    EnrootHookInputs inputs;
    struct Required {
        const char* name;
        std::string* target;
    };
    for (Required r : {Required{"ENROOT_ROOTFS", &inputs.rootfs}, Required{"ENROOT_ENVIRON", &inputs.environ_file},
                       Required{"ENROOT_MOUNTS", &inputs.mounts_file}}) {
        auto value = lookup(env, r.name);
        if (!value) {
            Error e = make_error(std::string(r.name) +
                                 " is not set: `launchguard enroot-hook` must run as an enroot hook "
                                 "(/etc/enroot/hooks.d) or be given the ENROOT_* variables");
            e.field = r.name;
            return e;
        }
        *r.target = *value;
    }
    // enroot always passes the absolute path of an existing rootfs directory;
    // anything else means the hook is not running where it thinks it is, and
    // patching (or judging) some other tree would be wrong.
    std::error_code ec;
    if (inputs.rootfs.front() != '/' || !std::filesystem::is_directory(inputs.rootfs, ec)) {
        Error e =
            make_error("'" + inputs.rootfs + "' is not " +
                       (inputs.rootfs.front() != '/' ? std::string("an absolute path") : std::string("a directory")) +
                       ": enroot gives the hook the absolute path of the container's root filesystem");
        e.field = "ENROOT_ROOTFS";
        return e;
    }
    inputs.mounts_dirs.push_back(lookup(env, "ENROOT_SYSCONF_PATH").value_or("/etc/enroot") + "/mounts.d");
    if (auto user = lookup(env, "ENROOT_CONFIG_PATH")) inputs.mounts_dirs.push_back(*user + "/mounts.d");
    for (const auto& [name, value] : env) {
        if (name.rfind("ENROOT_", 0) != 0) inputs.host_env.emplace(name, value);
    }
    return inputs;
}

Result<LaunchContext> build_enroot_context(const EnrootHookInputs& inputs) {
    auto environ_text = read_text_file(inputs.environ_file);
    if (!environ_text) return environ_text.error();
    Environment container_env = parse_enroot_environ(*environ_text);

    const bool pyxis = started_by_pyxis(inputs.host_env);
    Environment task_env = pyxis ? inputs.host_env : Environment{};
    for (const auto& [name, value] : container_env) task_env[name] = value;

    // Mounts enroot will make: mounts.d first (sorted, as enroot globs them),
    // then what earlier hooks appended to $ENROOT_MOUNTS.
    std::vector<EnrootMount> mounts;
    for (const auto& dir : inputs.mounts_dirs) {
        std::error_code ec;
        std::vector<std::string> files;
        for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
            if (entry.path().extension() == ".fstab") files.push_back(entry.path().string());
        }
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            auto parsed = read_fstab(file);
            if (!parsed) return parsed.error();
            mounts.insert(mounts.end(), parsed->begin(), parsed->end());
        }
    }
    auto pending = read_fstab(inputs.mounts_file);
    if (!pending) return pending.error();
    mounts.insert(mounts.end(), pending->begin(), pending->end());

    ProbeOptions probe;
    probe.root = inputs.rootfs;
    probe.environment = task_env;
    probe.use_current_process_env = false;
    probe.hwloc_xml = inputs.hwloc_xml;
    probe.sysfs_root = inputs.sysfs_root;
    probe.runtime = pyxis ? Runtime::pyxis : Runtime::enroot;
    auto context = build_context(probe);
    if (!context) return context.error();

    LaunchContext ctx = std::move(context.value());
    auto host_files = std::make_shared<RootedFileView>(inputs.host_root, "host filesystem " + inputs.host_root);
    ctx.files = std::make_shared<EnrootFileView>(inputs.rootfs, host_files, std::move(mounts));
    // The hook runs before the tasks exist: their CPU binding is not known yet.
    ctx.cpu_mask = Fact<CpuSet>::unknown("an enroot hook runs before the tasks are bound to CPUs");
    HostView host;
    host.env = Fact<Environment>::known(inputs.host_env, "environment of the enroot hook (host side)");
    host.files = host_files;
    ctx.host = std::move(host);
    return ctx;
}

}  // namespace launchguard
