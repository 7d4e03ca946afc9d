#include "node/node_check_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "util/input_file.h"
#include "util/text.h"

namespace launchguard {
namespace {

constexpr std::string_view kKeys =
    "profile, mode, timeout, on-unknown, topology-cache, topology-cache-max-age, hwloc-xml, sysfs-root, scontrol, "
    "slurm-conf, node-name, metrics-file, record-dir, node-class, log-file";

class LineParser {
public:
    LineParser(const std::string& origin, int line, std::string key, std::string value)
        : origin_(origin), line_(line), key_(std::move(key)), value_(std::move(value)) {}

    [[nodiscard]] Error error(const std::string& message) const {
        Error e = make_file_error(origin_, line_, message);
        e.field = key_;
        return e;
    }
    [[nodiscard]] const std::string& value() const { return value_; }

    Result<std::string> absolute_path() const {
        if (value_.empty() || value_.front() != '/') return error("must be an absolute path, got '" + value_ + "'");
        return value_;
    }

private:
    const std::string& origin_;
    int line_;
    std::string key_;
    std::string value_;
};

Status apply(NodeCheckConfig& config, const std::string& key, const LineParser& p) {
    const std::string& value = p.value();
    auto set_path = [&](auto& target) -> Status {
        auto path = p.absolute_path();
        if (!path) return path.error();
        target = *path;
        return Done{};
    };
    if (key == "profile") {
        config.profile = value;
    } else if (key == "mode") {
        auto mode = parse_mode(value);
        if (!mode) return p.error("must be enforce, patch, warn or off, got '" + value + "'");
        config.options.mode = *mode;
    } else if (key == "timeout") {
        auto seconds = whole_number(value);
        if (!seconds || *seconds < 1 || *seconds > kMaxNodeCheckTimeoutSeconds) {
            return p.error("must be a whole number of seconds from 1 to " +
                           std::to_string(kMaxNodeCheckTimeoutSeconds) +
                           " (slurmd kills a health check after 60 s), got '" + value + "'");
        }
        config.timeout = std::chrono::seconds(*seconds);
    } else if (key == "on-unknown") {
        if (value == "keep")
            config.on_unknown = OnUnknown::keep;
        else if (value == "drain")
            config.on_unknown = OnUnknown::drain;
        else
            return p.error("must be keep or drain, got '" + value + "'");
    } else if (key == "topology-cache") {
        return set_path(config.options.topology_cache);
    } else if (key == "topology-cache-max-age") {
        auto seconds = whole_number(value);
        if (!seconds || *seconds < 0) return p.error("must be a whole number of seconds, got '" + value + "'");
        config.options.topology_cache_max_age = *seconds;
    } else if (key == "hwloc-xml") {
        return set_path(config.options.hwloc_xml);
    } else if (key == "sysfs-root") {
        return set_path(config.options.sysfs_root);
    } else if (key == "scontrol") {
        return set_path(config.scontrol);
    } else if (key == "slurm-conf") {
        return set_path(config.slurm_conf);
    } else if (key == "node-name") {
        if (auto checked = check_slurm_node_name(value); !checked) {
            return p.error(checked.error().message + ", got '" + value + "'");
        }
        config.node_name = value;
    } else if (key == "metrics-file") {
        return set_path(config.metrics_file);
    } else if (key == "record-dir") {
        return set_path(config.record_dir);
    } else if (key == "node-class") {
        config.node_class = value;
    } else if (key == "log-file") {
        return set_path(config.log_file);
    } else {
        return p.error("unknown key (keys: " + std::string(kKeys) + ")");
    }
    return Done{};
}

}  // namespace

Status check_slurm_node_name(std::string_view name) {
    const auto host_like = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
               c == '.';
    };
    const bool fits = !name.empty() && name.size() <= kMaxSlurmNodeNameBytes &&
                      std::all_of(name.begin(), name.end(), host_like) && name.front() != '-' && name.front() != '.';
    if (fits) return Done{};
    return make_error("must be one Slurm node name: 1 to " + std::to_string(kMaxSlurmNodeNameBytes) +
                      " letters, digits, '-', '_' or '.', not starting with '-' or '.' (no hostlist such as "
                      "gpu[001-100] or a,b)");
}

Result<NodeCheckConfig> parse_node_check_config(std::string_view text, const std::string& origin) {
    NodeCheckConfig config;
    std::set<std::string> seen;
    int line_number = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = trim(text.substr(start, end - start));
        start = end + 1;
        ++line_number;
        if (line.empty() || line.front() == '#') continue;
        if (line.find('\0') != std::string_view::npos) {
            return make_file_error(origin, line_number, "a NUL byte: not a text file");
        }
        auto eq = line.find('=');
        if (eq == std::string_view::npos) {
            return make_file_error(origin, line_number, "expected 'key = value', got '" + std::string(line) + "'");
        }
        std::string key(trim(line.substr(0, eq)));
        std::string value(trim(line.substr(eq + 1)));
        if (key.empty())
            return make_file_error(origin, line_number, "a value without a key: '" + std::string(line) + "'");
        LineParser parser(origin, line_number, key, value);
        if (value.empty()) return parser.error("has no value");
        if (!seen.insert(key).second) return parser.error("is set twice");
        if (auto applied = apply(config, key, parser); !applied) return applied.error();
    }
    return config;
}

Result<NodeCheckConfig> load_node_check_config(const std::string& path, bool named_explicitly) {
    struct stat st {};
    if (!named_explicitly && ::stat(path.c_str(), &st) != 0 && errno == ENOENT) return NodeCheckConfig{};
    auto text = read_text_file(path, kMaxNodeCheckConfigBytes);
    if (!text) return text.error();
    return parse_node_check_config(*text, path);
}

}  // namespace launchguard
