// NCCL's environment/configuration semantics (NCCL 2.30, src/misc/param.cc):
// initEnvFunc() loads NCCL_CONF_FILE (else $HOME/.nccl.conf) and then
// /etc/nccl.conf through setEnvFile(); every line goes to setenv(name, value, 0)
// (ncclOsSetEnv, os/linux.cc), so whoever defines a name first wins and the
// process environment beats both files. Integer parameters go through
// ncclLoadParam(): strtoll(str, NULL, 0), default only on errno.
#include "nccl/nccl_config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "util/text.h"

namespace launchguard::nccl {
namespace {

// setEnvFile() reads with fgets into char line[4096]: a longer physical line
// arrives in several pieces, each handled as a line of its own.
constexpr std::size_t kFgetsChunk = 4095;
// envVar/envValue are char[1024]: names and values are cut at 1023 bytes.
constexpr std::size_t kMaxNameOrValue = 1023;
constexpr std::string_view kEnvironmentOrigin = "environment";

// Every NCCL_PARAM(...) in NCCL 2.30 (read by ncclLoadParam with strtoll),
// plus NCCL_P2P_DISABLE, which ncclGetLevel (graph/paths.cc) reads with
// strtol. NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL are deliberately absent: they
// take path names (PIX, PXB, SYS...) as well as legacy integers. Sorted for
// binary search.
constexpr std::array kIntegerVariables = std::to_array<std::string_view>({
    "NCCL_ALLGATHERV_ENABLE",
    "NCCL_ALLOC_P2P_NET_LL_BUFFERS",
    "NCCL_BUFFSIZE",
    "NCCL_CGA_CLUSTER_SIZE",
    "NCCL_CHECK_POINTERS",
    "NCCL_CHUNK_SIZE",
    "NCCL_COLLNET_ENABLE",
    "NCCL_COLLNET_NODE_THRESHOLD",
    "NCCL_COMM_BLOCKING",
    "NCCL_COMM_SHRINK_SHARE_RESOURCES",
    "NCCL_COMM_SPLIT_SHARE_RESOURCES",
    "NCCL_CONNECT_ROUND_MAX_PEERS",
    "NCCL_CROSS_NIC",
    "NCCL_CUMEM_ENABLE",
    "NCCL_CUMEM_HOST_ENABLE",
    "NCCL_DISABLE_MEM_MANAGER",
    "NCCL_DMABUF_ENABLE",
    "NCCL_ENABLE_VERSION_CHECK",
    "NCCL_GDRCOPY_ENABLE",
    "NCCL_GDRCOPY_FIFO_ENABLE",
    "NCCL_GDRCOPY_FLUSH_ENABLE",
    "NCCL_GDRCOPY_SYNC_ENABLE",
    "NCCL_GDR_FLUSH_DISABLE",
    "NCCL_GIN_ENABLE",
    "NCCL_GIN_NCONNECTIONS",
    "NCCL_GIN_TYPE",
    "NCCL_GRAPH_DUMP_FILE_RANK",
    "NCCL_GRAPH_MIXING_SUPPORT",
    "NCCL_GRAPH_REGISTER",
    "NCCL_IB_ADAPTIVE_ROUTING",
    "NCCL_IB_AR_THRESHOLD",
    "NCCL_IB_DATA_DIRECT",
    "NCCL_IB_DISABLE",
    "NCCL_IB_ECE_ENABLE",
    "NCCL_IB_FIFO_TC",
    "NCCL_IB_GID_INDEX",
    "NCCL_IB_MERGE_NICS",
    "NCCL_IB_MERGE_VFS",
    "NCCL_IB_OOO_RQ",
    "NCCL_IB_PCI_RELAXED_ORDERING",
    "NCCL_IB_PKEY",
    "NCCL_IB_QPS_PER_CONNECTION",
    "NCCL_IB_RETRY_CNT",
    "NCCL_IB_ROCE_VERSION_NUM",
    "NCCL_IB_ROUTABLE_FLID_GID_INDEX",
    "NCCL_IB_SL",
    "NCCL_IB_SPLIT_DATA_ON_QPS",
    "NCCL_IB_TC",
    "NCCL_IB_TIMEOUT",
    "NCCL_IB_USE_INLINE",
    "NCCL_IGNORE_CPU_AFFINITY",
    "NCCL_IGNORE_DISABLED_P2P",
    "NCCL_LL128_BUFFSIZE",
    "NCCL_LL128_NTHREADS",
    "NCCL_LL_BUFFSIZE",
    "NCCL_LOCAL_REGISTER",
    "NCCL_MAX_CTAS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_MAX_NRINGS",
    "NCCL_MAX_P2P_NCHANNELS",
    "NCCL_MIN_CTAS",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MIN_NRINGS",
    "NCCL_MIN_P2P_NCHANNELS",
    "NCCL_MNNVL_CLIQUE_ID",
    "NCCL_MNNVL_ENABLE",
    "NCCL_MNNVL_UUID",
    "NCCL_NCHANNELS_PER_NET_PEER",
    "NCCL_NET_DISABLE_INTRA",
    "NCCL_NET_FORCE_FLUSH",
    "NCCL_NET_GDR_C2C",
    "NCCL_NET_GDR_READ",
    "NCCL_NET_OVERHEAD",
    "NCCL_NET_SHARED_BUFFERS",
    "NCCL_NET_SHARED_COMMS",
    "NCCL_NSOCKS_PERTHREAD",
    "NCCL_NTHREADS",
    "NCCL_NVB_DISABLE",
    "NCCL_NVB_PRECONNECT",
    "NCCL_NVLSTREE_MAX_CHUNKSIZE",
    "NCCL_NVLS_CHUNKSIZE",
    "NCCL_NVLS_ENABLE",
    "NCCL_NVLS_NCHANNELS",
    "NCCL_P2P_DIRECT_DISABLE",
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LL_THRESHOLD",
    "NCCL_P2P_NET_CHUNKSIZE",
    "NCCL_P2P_NVL_CHUNKSIZE",
    "NCCL_P2P_PCI_CHUNKSIZE",
    "NCCL_P2P_PER_CHANNEL_NET_BW",
    "NCCL_P2P_PXN_LEVEL",
    "NCCL_P2P_READ_ENABLE",
    "NCCL_PAT_ENABLE",
    "NCCL_PROXY_APPEND_BATCH_SIZE",
    "NCCL_PXN_C2C",
    "NCCL_PXN_DISABLE",
    "NCCL_RAS_ENABLE",
    "NCCL_RUNTIME_CONNECT",
    "NCCL_SET_STACK_SIZE",
    "NCCL_SHM_DISABLE",
    "NCCL_SHM_LOCALITY",
    "NCCL_SOCKET_NTHREADS",
    "NCCL_SOCKET_RCVBUF",
    "NCCL_SOCKET_SNDBUF",
    "NCCL_TOPO_DUMP_FILE_RANK",
    "NCCL_UID_STAGGER_RATE",
    "NCCL_UID_STAGGER_THRESHOLD",
    "NCCL_WIN_ENABLE",
    "NCCL_WORK_ARGS_BYTES",
    "NCCL_WORK_FIFO_BYTES",
});
static_assert(std::is_sorted(kIntegerVariables.begin(), kIntegerVariables.end()), "binary search needs order");

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

// A name someone could look up with getenv("NAME"): NCCL, CUDA and friends
// only ever ask for C identifiers, so "NCCL_IB_HCA " or "export NCCL_DEBUG"
// are set by setenv() but never read.
bool is_lookup_name(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) != 0) return false;
    return std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; });
}

// The value the author most likely meant: inline comment dropped, spaces
// trimmed, one pair of matching quotes removed.
std::string_view intended_value(std::string_view value) {
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (value[i] == '#' && (i == 0 || value[i - 1] == ' ' || value[i - 1] == '\t')) {
            value = value.substr(0, i);
            break;
        }
    }
    value = trim(value);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
    }
    return value;
}

bool has_inline_comment(std::string_view value) {
    for (std::size_t i = 1; i < value.size(); ++i) {
        if (value[i] == '#' && (value[i - 1] == ' ' || value[i - 1] == '\t')) return true;
    }
    return false;
}

// "8M" / "4GiB" / "64k": a number followed by a binary size suffix, which
// strtoll reads as the bare number. Returns the byte count the author meant.
std::optional<long long> size_with_suffix(std::string_view text) {
    IntValue number = parse_int(text);
    if (number.complete || number.overflow) return std::nullopt;
    std::size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) ++digits;
    if (digits == 0 || digits == text.size()) return std::nullopt;
    std::string suffix;
    for (char c : text.substr(digits)) suffix.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    int shift = 0;
    if (suffix == "K" || suffix == "KB" || suffix == "KIB")
        shift = 10;
    else if (suffix == "M" || suffix == "MB" || suffix == "MIB")
        shift = 20;
    else if (suffix == "G" || suffix == "GB" || suffix == "GIB")
        shift = 30;
    else
        return std::nullopt;
    if (number.value > (std::numeric_limits<long long>::max() >> shift)) return std::nullopt;
    return number.value << shift;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

LintIssue make_issue(std::string_view origin, int line, std::string_view name, std::string problem,
                     std::string corrected) {
    LintIssue issue;
    issue.path = std::string(origin);
    issue.line = line;
    issue.name = std::string(name);
    issue.problem = std::move(problem);
    issue.corrected = std::move(corrected);
    return issue;
}

// What NCCL makes of an integer variable's literal value, if that differs
// from what the author meant.
// Sets corrected_value to the integer the author meant, or to nullopt when
// there is none to offer (repeating the broken value would be no fix).
std::optional<std::string> integer_problem(std::string_view value, std::string_view meant,
                                           std::optional<std::string>& corrected_value) {
    IntValue read = parse_int(value);
    if (value.empty()) {
        corrected_value.reset();
        return "empty value: NCCL ignores it and uses the built-in default";
    }
    if (read.overflow) {
        corrected_value.reset();
        return "value " + quoted(value) + " is out of range: NCCL ignores it and uses the default";
    }
    if (auto bytes = size_with_suffix(meant)) {
        corrected_value = std::to_string(*bytes);
        return "size suffixes are not understood: strtoll reads " + quoted(value) + " as " +
               std::to_string(read.value) + ", not " + *corrected_value;
    }
    IntValue intended = parse_int(meant);
    if (read.complete || (intended.complete && intended.value == read.value)) return std::nullopt;
    if (intended.complete) {
        corrected_value = std::to_string(intended.value);
        return "NCCL reads " + quoted(value) + " as " + std::to_string(read.value) + ", not " + *corrected_value;
    }
    corrected_value.reset();
    return "not an integer: strtoll reads " + quoted(value) + " as " + std::to_string(read.value) +
           " and NCCL uses that silently";
}

std::optional<ConfFile> load_conf_file(const FileView& files, const std::string& path, std::string_view why,
                                       std::vector<std::string>& notes) {
    FileInfo info = files.stat(path);
    auto skip = [&](std::string_view because) -> std::optional<ConfFile> {
        std::string note = std::string(why) + " " + std::string(because);
        if (!info.detail.empty()) note += " (" + info.detail + ")";
        notes.push_back(std::move(note));
        return std::nullopt;
    };
    switch (info.kind) {
        case FileKind::regular:
            break;
        case FileKind::missing:
            // Only a file someone asked for explicitly is worth a note; the
            // default locations are usually absent.
            if (why.starts_with("NCCL_CONF_FILE")) return skip("names a missing file: skipped");
            return std::nullopt;
        case FileKind::directory:
            return skip("is a directory: NCCL opens it but reads no settings");
        case FileKind::dangling_symlink:
            return skip("is a dangling symlink: skipped");
        case FileKind::unreadable:
            return skip("is unreadable by the task: skipped");
        case FileKind::other:
            return skip("is not a regular file: launchguard cannot tell what NCCL reads");
        case FileKind::unknown:
            return skip("cannot be seen from here: unknown whether the task has it");
    }
    auto text = files.read(path);
    if (!text) {
        notes.push_back(std::string(why) + " could not be read: " + text.error().to_string());
        return std::nullopt;
    }
    return parse_conf(path, *text);
}

// setenv(name, value, 0) for every entry of one file, in file order.
void apply_conf(const ConfFile& file, Source source, const Environment& env, EffectiveConfig& config) {
    for (const auto& entry : file.entries) {
        if (!is_lookup_name(entry.name)) continue;  // set, but under a name nobody reads
        if (config.settings.contains(entry.name)) continue;
        Setting setting;
        setting.name = entry.name;
        if (auto in_env = env.find(entry.name); in_env != env.end()) {
            // Already in the process environment (a non-NCCL_ name we did not
            // list up front): the file cannot override it.
            setting.value = in_env->second;
            setting.source = Source::environment;
            setting.origin = std::string(kEnvironmentOrigin);
        } else {
            setting.value = entry.value;
            setting.source = source;
            setting.origin = file.path + ":" + std::to_string(entry.line);
        }
        if (entry.name == "NCCL_CONF_FILE" && setting.source != Source::environment) {
            config.notes.push_back(setting.origin +
                                   ": NCCL_CONF_FILE inside a conf file has no effect (NCCL reads it from the "
                                   "process environment before loading any file)");
        }
        config.settings.emplace(entry.name, std::move(setting));
    }
}

// FileView stand-in for a context that has none: the task's files are unknown.
class NoFiles final : public FileView {
public:
    [[nodiscard]] FileInfo stat(std::string_view /*path*/) const override {
        FileInfo info;
        info.kind = FileKind::unknown;
        info.detail = "no file view for this launch";
        return info;
    }
    [[nodiscard]] Result<std::string> read(std::string_view path, std::size_t /*max_bytes*/) const override {
        return make_error("no file view for this launch: cannot read " + std::string(path));
    }
    [[nodiscard]] std::vector<std::string> list(std::string_view /*dir*/) const override { return {}; }
    [[nodiscard]] std::string describe() const override { return "no file view"; }
};

EffectiveConfig resolve_impl(const Environment& env, const FileView& files, bool env_known,
                             const std::map<std::string, std::string, std::less<>>& unknown = {}) {
    EffectiveConfig config;
    config.env_known = env_known;
    config.unknown = unknown;
    for (const auto& [name, value] : env) {
        if (!name.starts_with("NCCL_")) continue;
        config.settings.emplace(name, Setting{name, value, Source::environment, std::string(kEnvironmentOrigin)});
    }

    struct Candidate {
        std::string path;
        Source source;
        std::string why;
    };
    std::vector<Candidate> candidates;
    auto conf_file = env.find("NCCL_CONF_FILE");
    auto unknown_choice = unknown.find("NCCL_CONF_FILE");
    if (unknown_choice == unknown.end() && conf_file == env.end()) unknown_choice = unknown.find("HOME");
    if (unknown_choice != unknown.end()) {
        config.notes.push_back(unknown_choice->first + " is unknown (" + unknown_choice->second +
                               "): cannot tell which conf file besides /etc/nccl.conf applies");
    } else if (!env_known) {
        config.notes.push_back(
            "task environment unknown: cannot tell whether NCCL_CONF_FILE or $HOME/.nccl.conf apply; only "
            "/etc/nccl.conf was considered");
    } else if (conf_file != env.end() && !conf_file->second.empty()) {
        if (!conf_file->second.starts_with('/')) {
            config.notes.push_back("NCCL_CONF_FILE=" + conf_file->second +
                                   " is relative: NCCL opens it from the task's working directory");
        }
        candidates.push_back({conf_file->second, Source::conf_file, "NCCL_CONF_FILE=" + conf_file->second});
    } else if (auto home = env.find("HOME"); home != env.end()) {
        // getenv("HOME") + "/.nccl.conf"; an empty HOME gives "/.nccl.conf".
        std::string path = home->second + "/.nccl.conf";
        candidates.push_back({path, Source::user_conf, "$HOME/.nccl.conf (" + path + ")"});
    } else {
        config.notes.push_back("HOME is not set: NCCL skips $HOME/.nccl.conf");
    }
    candidates.push_back({std::string(kSystemConfPath), Source::system_conf, std::string(kSystemConfPath)});

    for (const auto& candidate : candidates) {
        auto file = load_conf_file(files, candidate.path, candidate.why, config.notes);
        if (!file) continue;
        apply_conf(*file, candidate.source, env, config);
        config.loaded.push_back(std::move(*file));
    }
    // An unknown value in the environment may beat a conf file's: neither is in effect for sure.
    for (const auto& [name, why] : unknown) config.settings.erase(name);
    return config;
}

}  // namespace

std::string_view to_string(Source source) {
    switch (source) {
        case Source::environment:
            return "environment";
        case Source::conf_file:
            return "conf_file";
        case Source::user_conf:
            return "user_conf";
        case Source::system_conf:
            return "system_conf";
    }
    return "unknown";
}

ConfFile parse_conf(std::string path, std::string_view text) {
    ConfFile file;
    file.path = std::move(path);
    int line_number = 1;
    std::size_t pos = 0;
    while (pos < text.size()) {
        // One fgets() call: up to and including '\n', at most 4095 bytes.
        std::size_t newline = text.find('\n', pos);
        std::size_t end = newline == std::string_view::npos ? text.size() : newline + 1;
        end = std::min(end, pos + kFgetsChunk);
        std::string_view chunk = text.substr(pos, end - pos);
        bool ends_line = !chunk.empty() && chunk.back() == '\n';
        pos = end;
        const int this_line = line_number;
        if (ends_line) ++line_number;

        // strlen() stops at an embedded NUL; then one '\n' and one '\r' go.
        std::string_view line = chunk.substr(0, chunk.find('\0'));
        if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!line.empty() && line.front() == '#') continue;
        auto equals = line.find('=');
        if (equals == std::string_view::npos) continue;

        ConfEntry entry;
        entry.line = this_line;
        entry.raw = std::string(line);
        entry.name = std::string(line.substr(0, std::min(equals, kMaxNameOrValue)));
        entry.value = std::string(line.substr(equals + 1, kMaxNameOrValue));
        file.entries.push_back(std::move(entry));
    }
    return file;
}

std::vector<LintIssue> lint_value(std::string_view origin, int line, std::string_view name, std::string_view value) {
    std::vector<LintIssue> issues;
    try {
        std::string_view meant = intended_value(value);
        std::optional<std::string> corrected_value{std::string(meant)};
        std::vector<std::string> problems;

        if (!value.empty() &&
            (value.front() == '"' || value.front() == '\'' || value.back() == '"' || value.back() == '\'')) {
            problems.push_back("quotes are kept literally: NCCL reads " + quoted(value));
        }
        if (has_inline_comment(value) || (!value.empty() && value.front() == '#')) {
            problems.push_back("'#' does not start a comment here: the value NCCL reads is " + quoted(value));
        } else if (trim(value) != value) {
            problems.push_back("leading or trailing whitespace is kept: NCCL reads " + quoted(value));
        }
        if (is_integer_variable(name)) {
            if (auto problem = integer_problem(value, meant, corrected_value)) problems.push_back(*problem);
        }
        if (name == "NCCL_TOPO_FILE" && value.empty()) {
            // NCCL tries to open "", warns, and auto-detects: the same as an
            // unset variable, except that the nvidia-topologyd default path
            // is then not tried either.
            problems.push_back(
                "NCCL_TOPO_FILE is set but empty: NCCL warns that it cannot open '' and auto-detects "
                "the topology, without trying /var/run/nvidia-topologyd/virtualTopology.xml");
            corrected_value.reset();
        }
        std::string corrected = corrected_value ? std::string(name) + "=" + *corrected_value : std::string();
        for (auto& problem : problems) issues.push_back(make_issue(origin, line, name, std::move(problem), corrected));
    } catch (...) {
        // Only allocation failure: return what we have.
    }
    return issues;
}

std::vector<LintIssue> lint_conf(const ConfFile& file) {
    std::vector<LintIssue> issues;
    try {
        for (const auto& entry : file.entries) {
            std::string_view name = entry.name;
            std::string_view meant_name = trim(name);
            bool has_export = false;
            if (meant_name.starts_with("export ") || meant_name.starts_with("export\t")) {
                has_export = true;
                meant_name = trim(meant_name.substr(6));
            }
            std::vector<std::string> problems;
            if (meant_name.starts_with('#')) {
                problems.push_back(
                    "only lines whose first character is '#' are comments: NCCL sets a variable "
                    "named " +
                    quoted(name));
            } else if (has_export) {
                problems.push_back("'export' is not understood: NCCL sets a variable named " + quoted(name));
            } else if (name.empty()) {
                problems.push_back("no variable name before '=': NCCL ignores a line without a name");
            } else if (!name.empty() && is_space(name.back())) {
                problems.push_back("spaces around '=': NCCL sets a variable named " + quoted(name));
            } else if (!name.empty() && is_space(name.front())) {
                problems.push_back("leading whitespace: NCCL sets a variable named " + quoted(name));
            } else if (!is_lookup_name(name)) {
                problems.push_back(quoted(name) + " is not a variable name anything reads");
            }
            // With a broken name the space after '=' belongs to the same
            // mistake ("NAME = value"), so lint the value as it was meant.
            std::string_view value = entry.value;
            if (!problems.empty()) {
                while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
            }
            auto value_issues = lint_value(file.path, entry.line, meant_name, value);
            // Without a name there is no line to offer: writing "=value"
            // again would be ignored again.
            std::string corrected = meant_name.empty() ? std::string()
                                    : value_issues.empty()
                                        ? std::string(meant_name) + "=" + std::string(intended_value(value))
                                        : value_issues.front().corrected;
            for (auto& problem : problems) {
                issues.push_back(make_issue(file.path, entry.line, meant_name, std::move(problem), corrected));
            }
            for (auto& issue : value_issues) issues.push_back(std::move(issue));
        }
    } catch (...) {
        // Only allocation failure: return what we have.
    }
    return issues;
}

bool is_integer_variable(std::string_view name) {
    return std::binary_search(kIntegerVariables.begin(), kIntegerVariables.end(), name);
}

const Setting* EffectiveConfig::get(std::string_view name) const {
    auto it = settings.find(name);
    return it == settings.end() ? nullptr : &it->second;
}

std::optional<std::string> EffectiveConfig::value(std::string_view name) const {
    if (const Setting* setting = get(name)) return setting->value;
    return std::nullopt;
}

EffectiveConfig resolve(const Environment& env, const FileView& files) {
    try {
        return resolve_impl(env, files, true);
    } catch (...) {
        EffectiveConfig failed;
        failed.notes.push_back("launchguard could not resolve the NCCL configuration (out of memory)");
        return failed;
    }
}

EffectiveConfig resolve(const LaunchContext& ctx) {
    try {
        static const NoFiles no_files;
        const FileView& files = ctx.files ? *ctx.files : static_cast<const FileView&>(no_files);
        if (ctx.env.is_known()) {
            // Variables the env lists are decided; any other may come from a
            // source launchguard cannot read, so an absent one is unknown.
            EffectiveConfig config =
                resolve_impl(ctx.env.value(), files, ctx.env_unread_sources.empty(), ctx.env_unknown);
            for (const auto& source : ctx.env_unread_sources) {
                config.notes.push_back("the environment may hold more variables: " + source);
            }
            return config;
        }
        EffectiveConfig config = resolve_impl(Environment{}, files, false);
        if (!ctx.env.reason().empty()) config.notes.push_back("task environment unknown: " + ctx.env.reason());
        return config;
    } catch (...) {
        EffectiveConfig failed;
        failed.env_known = ctx.env.is_known();
        failed.notes.push_back("launchguard could not resolve the NCCL configuration (out of memory)");
        return failed;
    }
}

IntValue parse_int(std::string_view text) {
    IntValue result;
    // NCCL hands strtoll a C string: it ends at the first NUL.
    std::string copy(text.substr(0, text.find('\0')));
    const char* begin = copy.c_str();
    char* end = nullptr;
    errno = 0;
    result.value = std::strtoll(begin, &end, 0);
    result.overflow = errno == ERANGE;
    result.complete = end != begin && *end == '\0' && copy.size() == text.size();
    return result;
}

std::optional<ListChoice> parse_list(std::string_view value, const std::vector<std::string_view>& names) {
    if (value.find_first_of(";:") != std::string_view::npos) return std::nullopt;
    bool exclude = value.starts_with('^');
    if (exclude) value.remove_prefix(1);
    std::vector<bool> named(names.size(), false);
    ListChoice choice;
    std::size_t begin = 0;
    while (begin <= value.size()) {
        std::size_t end = std::min(value.find(',', begin), value.size());
        std::string_view token = value.substr(begin, end - begin);
        begin = end + 1;
        if (token.empty()) continue;  // strtok_r skips empty tokens
        bool found = false;
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (token.size() == names[i].size() &&
                std::equal(token.begin(), token.end(), names[i].begin(), [](char a, char b) {
                    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
                })) {
                named[i] = true;
                found = true;
            }
        }
        if (!found) choice.ignored.emplace_back(token);
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
        (named[i] != exclude ? choice.enabled : choice.disabled).emplace_back(names[i]);
    }
    return choice;
}

}  // namespace launchguard::nccl
