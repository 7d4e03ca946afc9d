// NCCL's own configuration semantics, reproduced so every rule agrees with
// what NCCL will do (initEnv and setEnvFile in NCCL's src/misc/param.cc,
// which set each conf value with setenv(name, value, 0), so nothing overwrites
// what is already set; integers through ncclLoadParam's strtoll):
//   process env  >  NCCL_CONF_FILE (else $HOME/.nccl.conf)  >  /etc/nccl.conf
// with NCCL's literal parser: no trimming, no quote removal, no `export`.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "context/file_view.h"
#include "context/launch_context.h"

namespace launchguard::nccl {

inline constexpr std::string_view kSystemConfPath = "/etc/nccl.conf";

enum class Source {
    environment,  // the task's process environment
    conf_file,    // the file NCCL_CONF_FILE names
    user_conf,    // $HOME/.nccl.conf (only when NCCL_CONF_FILE is unset or empty)
    system_conf,  // /etc/nccl.conf
};
std::string_view to_string(Source source);

// One `name=value` line exactly as NCCL's setEnvFile() splits it: the name is
// everything before the first '=', the value everything after it up to the
// end of the line. NCCL 2.30 drops one trailing '\n' and then one trailing
// '\r', so CRLF files work; nothing else is trimmed. Names and values are cut
// at 1023 bytes, and a physical line longer than 4095 bytes is read (by
// fgets) as several lines that share one line number here.
struct ConfEntry {
    int line = 0;
    std::string raw;    // the line as written
    std::string name;   // literal, may contain spaces or "export "
    std::string value;  // literal, may contain quotes or "# comment"
};

struct ConfFile {
    std::string path;  // inside the file view
    std::vector<ConfEntry> entries;
};

// NCCL's parser never fails: lines without '=' and comment lines are skipped.
ConfFile parse_conf(std::string path, std::string_view text);

// One quirk in a conf line (or an environment value) that makes NCCL read
// something other than what the author meant.
struct LintIssue {
    std::string path;       // conf file path, or "environment"
    int line = 0;           // 0 for environment values
    std::string name;       // the variable as the author meant it
    std::string problem;    // "spaces around '=': NCCL reads a variable named 'NCCL_IB_HCA '"
    std::string corrected;  // the line as it should be written; empty when no value can be offered
};
std::vector<LintIssue> lint_conf(const ConfFile& file);
// Integer-valued NCCL_* variables whose value strtoll would read partially
// ("8M" -> 8) or as 0 ("four"), and quoted values.
std::vector<LintIssue> lint_value(std::string_view origin, int line, std::string_view name, std::string_view value);

// Is `name` an NCCL variable read as an integer (NCCL_BUFFSIZE, NCCL_IB_QPS_PER_CONNECTION, ...)?
bool is_integer_variable(std::string_view name);

struct Setting {
    std::string name;
    std::string value;
    Source source = Source::environment;
    std::string origin;  // "environment" or "/etc/nccl.conf:3"
};

struct EffectiveConfig {
    // Only names NCCL would actually look up (a literal "NCCL_IB_HCA " is kept
    // out of here and reported by lint_conf instead).
    std::map<std::string, Setting, std::less<>> settings;
    std::vector<ConfFile> loaded;    // conf files NCCL would load, in load order
    std::vector<std::string> notes;  // "NCCL_CONF_FILE=/x names a missing file: skipped"
    bool env_known = true;           // false when the task env is unknown or may hold any variable
    // Variables whose value is unknown, each with the construct that sets it
    // (LaunchContext::env_unknown); they are not in `settings`.
    std::map<std::string, std::string, std::less<>> unknown;

    [[nodiscard]] const Setting* get(std::string_view name) const;
    // Whether `name` is decided: known to be set (get) or known to be unset.
    [[nodiscard]] bool decided(std::string_view name) const { return env_known && unknown.find(name) == unknown.end(); }
    [[nodiscard]] std::optional<std::string> value(std::string_view name) const;
};

// Resolves as the task sees it: env from the context, files through its view.
EffectiveConfig resolve(const Environment& env, const FileView& files);
EffectiveConfig resolve(const LaunchContext& ctx);

// strtoll(str, nullptr, 0) as NCCL's ncclLoadParam uses it.
struct IntValue {
    long long value = 0;
    bool complete = false;  // the whole string was consumed (no "M", no " # x")
    bool overflow = false;  // errno == ERANGE: NCCL falls back to the default
};
IntValue parse_int(std::string_view text);

// The names NCCL_ALGO and NCCL_PROTO choose from (NCCL src/graph/tuning.cc,
// ncclAlgoStr and ncclProtoStr); parseList matches each token to them
// whole and without regard to case.
inline constexpr std::array<std::string_view, 7> kAlgorithms = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
inline constexpr std::array<std::string_view, 3> kProtocols = {"LL", "LL128", "Simple"};

// What a value without per-collective lists ("Ring,Tree", "^LL128") leaves
// enabled, as NCCL's parseList reads it; tokens that name nothing are
// ignored by NCCL and listed here. nullopt for per-collective lists (";", ":").
struct ListChoice {
    std::vector<std::string> enabled;
    std::vector<std::string> disabled;
    std::vector<std::string> ignored;
};
std::optional<ListChoice> parse_list(std::string_view value, const std::vector<std::string_view>& names);

}  // namespace launchguard::nccl
