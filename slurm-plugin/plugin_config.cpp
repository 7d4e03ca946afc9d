#include "plugin_config.h"

#include "engine/mode_policy.h"
#include "util/text.h"

#include <algorithm>

namespace launchguard::slurm {
namespace {

Error arg_error(const std::string& arg, std::string message) {
    Error e = make_error(std::move(message));
    e.field = arg;
    return e;
}

Result<std::vector<Mode>> parse_mode_list(const std::string& arg, std::string_view list) {
    std::vector<Mode> modes;
    std::size_t start = 0;
    while (start <= list.size()) {
        std::size_t comma = list.find(',', start);
        if (comma == std::string_view::npos) comma = list.size();
        std::string_view item = list.substr(start, comma - start);
        auto mode = parse_mode(item);
        if (!mode) return arg_error(arg, "'" + std::string(item) + "' is not a mode (enforce, patch, warn, off)");
        modes.push_back(*mode);
        start = comma + 1;
    }
    return modes;
}

}  // namespace

Result<PluginConfig> parse_plugin_args(const std::vector<std::string>& args) {
    PluginConfig config;
    for (const auto& arg : args) {
        auto eq = arg.find('=');
        if (eq == std::string::npos || eq == 0) {
            return arg_error(arg, "expected key=value (keys: profile, mode, user-modes, topology-cache, on-error)");
        }
        std::string key = arg.substr(0, eq);
        std::string value = arg.substr(eq + 1);
        if (key == "profile") {
            if (value.empty()) return arg_error(arg, "profile needs a name or a path");
            config.profile = value;
        } else if (key == "mode") {
            auto mode = parse_mode(value);
            if (!mode) return arg_error(arg, "mode must be enforce, patch, warn or off");
            config.mode = *mode;
        } else if (key == "user-modes") {
            auto modes = parse_mode_list(arg, value);
            if (!modes) return modes.error();
            config.user_modes = modes.value();
        } else if (key == "topology-cache") {
            if (value.empty() || value.front() != '/') return arg_error(arg, "topology-cache must be an absolute path");
            config.topology_cache = value;
        } else if (key == "topology-cache-max-age" || key == "node-facts-max-age" || key == "node-read-timeout") {
            auto seconds = whole_number(value);
            if (!seconds || *seconds < 0) return arg_error(arg, key + " must be a number of seconds");
            // A wait, unlike an age, is added to a clock reading: a day is far past any read.
            if (key == "node-read-timeout" && *seconds > 86400)
                return arg_error(arg, "node-read-timeout must be at most 86400 seconds (0: no bound)");
            long& field = key == "node-facts-max-age"  ? config.node_facts_max_age
                          : key == "node-read-timeout" ? config.node_read_timeout
                                                       : config.topology_cache_max_age;
            field = *seconds;
        } else if (key == "on-error") {
            if (value == "allow")
                config.on_error = OnError::allow;
            else if (value == "block")
                config.on_error = OnError::block;
            else
                return arg_error(arg, "on-error must be allow or block");
        } else if (key == "hwloc-xml") {
            config.hwloc_xml = value;
        } else if (key == "sysfs-root") {
            config.sysfs_root = value;
        } else if (key == "timing") {
            if (value != "0" && value != "1") return arg_error(arg, "timing must be 0 or 1");
            config.timing = value == "1";
        } else {
            return arg_error(arg,
                             "unknown key '" + key +
                                 "' (keys: profile, mode, user-modes, topology-cache, topology-cache-max-age, "
                                 "node-facts-max-age, node-read-timeout, on-error, hwloc-xml, sysfs-root, timing)");
        }
    }
    return config;
}

bool user_may_choose(const PluginConfig& config, Mode requested) {
    return UserModePolicy{config.mode, config.user_modes}.may_choose(requested);
}

std::string node_facts_cache_path(const PluginConfig& config) {
    const std::string& topology = config.topology_cache;
    const auto slash = topology.rfind('/');
    return (slash == std::string::npos ? std::string() : topology.substr(0, slash)) + "/node-facts.json";
}

std::string allowed_user_modes(const PluginConfig& config) {
    return UserModePolicy{config.mode, config.user_modes}.describe_allowed();
}

}  // namespace launchguard::slurm
