// What rules produce: findings with evidence and remediation expressed as
// abstract operations that each adapter translates into its own form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace launchguard {

// What a profile says to do when a rule fires.
enum class Action { block, patch, warn, off };
std::string_view to_string(Action action);
std::optional<Action> parse_action(std::string_view text);

enum class Severity { error, warning, info };
std::string_view to_string(Severity severity);

// One remediation step. Adapters apply the kinds they can (SPANK: env;
// enroot: environ and mount lines; Kubernetes: JSONPatch; CLI: prints all).
struct RemediationOp {
    enum class Kind {
        set_env,         // name=value in the task environment
        unset_env,       // remove name from the task environment
        mount_file,      // bind host -> container, read-only
        shm_size,        // give /dev/shm at least `bytes`
        add_capability,  // add `name` (e.g. IPC_LOCK) to the container
        manual,          // a human step: BIOS, kernel parameter, fix a file, drain a node
    };
    Kind kind = Kind::manual;
    std::string name;       // variable or capability
    std::string value;      // set_env value
    std::string host_path;  // mount_file
    std::string container_path;
    bool readonly = true;
    std::uint64_t bytes = 0;  // shm_size
    std::string text;         // manual: the instruction

    static RemediationOp set_env(std::string name, std::string value);
    static RemediationOp unset_env(std::string name);
    static RemediationOp mount_file(std::string host, std::string container);
    static RemediationOp shm(std::uint64_t bytes);
    static RemediationOp capability(std::string cap);
    static RemediationOp manual_step(std::string text);
};
std::string_view to_string(RemediationOp::Kind kind);

// Ordered key/value pairs: what the rule saw, with where it saw it.
using Evidence = std::vector<std::pair<std::string, std::string>>;

struct Finding {
    std::string rule;  // "topo.file-missing"
    Severity severity = Severity::warning;
    Action action = Action::warn;  // filled in by the engine from the profile
    std::string message;           // one line a user understands
    Evidence evidence;
    std::vector<RemediationOp> remediation;
    // The launch would run silently degraded unless this remediation is
    // applied (a host topology file that never reaches the container). In
    // patch mode such a finding is patched when the front end can apply the
    // whole remediation and blocked when it cannot, instead of becoming a
    // warning: patch mode must not let the headline case through quietly.
    bool fix_or_block = false;
};

// A rule that could not decide, and why ("cannot tell from the manifest ...").
struct Unknown {
    std::string rule;
    std::string reason;
};

}  // namespace launchguard
