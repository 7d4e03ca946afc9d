#include "pyxis.h"

#include "report/fix_script.h"
#include "report/text_report.h"
#include "rules/rule_helpers.h"
#include "util/text.h"

namespace launchguard::slurm {
namespace {

std::optional<std::string> option(const Environment& env, const char* spank_name, const char* default_name) {
    for (const char* name : {spank_name, default_name}) {
        auto found = env.find(name);
        if (found != env.end() && !found->second.empty()) return found->second;
    }
    return std::nullopt;
}

}  // namespace

PyxisOptions pyxis_options(const Environment& env) {
    PyxisOptions options;
    options.image = option(env, "_SLURM_SPANK_OPTION_pyxis_container_image", "PYXIS_CONTAINER_IMAGE");
    options.name = option(env, "_SLURM_SPANK_OPTION_pyxis_container_name", "PYXIS_CONTAINER_NAME");
    if (auto mounts = option(env, "_SLURM_SPANK_OPTION_pyxis_container_mounts", "PYXIS_CONTAINER_MOUNTS")) {
        options.mounts = split_list(*mounts, ',');
    }
    return options;
}

std::string pyxis_fix(const std::vector<RemediationOp>& ops) {
    std::vector<std::string> mounts;
    std::vector<std::string> exports;
    std::vector<std::string> env_names;
    std::vector<std::string> others;
    for (const auto& op : ops) {
        switch (op.kind) {
            case RemediationOp::Kind::mount_file:
                mounts.push_back(op.host_path + ":" + op.container_path + (op.readonly ? ":ro" : ""));
                break;
            case RemediationOp::Kind::set_env:
                exports.push_back("export " + op.name + "=" + shell_quote(op.value));
                env_names.push_back(op.name);
                break;
            default:
                others.push_back(describe_remediation(op));
                break;
        }
    }
    std::vector<std::string> parts;
    if (!mounts.empty()) parts.push_back("srun --container-mounts=" + rules::join(mounts, ","));
    if (!exports.empty()) {
        parts.push_back(rules::join(exports, "; ") + " and pass --container-env=" + rules::join(env_names, ","));
    }
    std::string fix = rules::join(parts, " with ");
    if (!mounts.empty()) fix += ", or ask the site to install the launchguard enroot hook";
    for (const auto& other : others) fix += (fix.empty() ? "" : "; ") + other;
    return fix;
}

}  // namespace launchguard::slurm
