// conf.*: NCCL's configuration files, read by setEnvFile in NCCL's
// src/misc/param.cc. NCCL reads nccl.conf from the filesystem the task runs
// in and parses it literally, so settings vanish at the container boundary
// (enroot mounts neither the host's /etc/nccl.conf nor its /var/run: its
// conf/mounts/*.fstab) and mistyped lines are set under names nobody reads —
// both without a message.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "nccl/nccl_config.h"
#include "rules/families.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"

namespace launchguard {
namespace {

// Variables whose loss reroutes traffic silently (wrong topology, TCP
// instead of IB); losing anything else is worth a warning.
constexpr std::string_view kTopoVariable = "NCCL_TOPO_FILE";
constexpr std::string_view kHcaVariable = "NCCL_IB_HCA";

// NCCL looks variables up by C identifier; a conf line named "export X" or
// "X " is set under that literal name and never read (conf.lint reports it).
bool is_nccl_name(std::string_view name) {
    return name.starts_with("NCCL_") &&
           std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; });
}

// Only a bare-metal launch is known to read the host's own /etc.
bool may_hide_host_files(Runtime runtime) { return runtime != Runtime::bare; }

// ---------------------------------------------------------------- conf.host-not-visible

struct HostValue {
    const nccl::ConfEntry* entry = nullptr;
    const nccl::Setting* task = nullptr;  // the task's effective setting, null when it has none
};

// setenv(..., 0): the first line that names a variable is the one NCCL keeps.
std::vector<HostValue> first_nccl_entries(const nccl::ConfFile& file, const nccl::EffectiveConfig& task_config) {
    std::vector<HostValue> values;
    std::set<std::string, std::less<>> seen;
    for (const auto& entry : file.entries) {
        if (!is_nccl_name(entry.name) || !seen.insert(entry.name).second) continue;
        values.push_back({&entry, task_config.get(entry.name)});
    }
    return values;
}

std::string task_state(const nccl::Setting* task) {
    if (task == nullptr) return "unset";
    return "'" + task->value + "' from " + task->origin;
}

std::string loaded_files(const nccl::EffectiveConfig& config) {
    std::vector<std::string> paths;
    for (const auto& file : config.loaded) paths.push_back(file.path);
    return paths.empty() ? "none" : rules::join(paths);
}

void check_host_not_visible(const RuleInput& in, RuleOutput& out) {
    const std::string conf_path(nccl::kSystemConfPath);
    if (!in.ctx.host || !in.ctx.host->files) {
        if (!may_hide_host_files(in.ctx.runtime)) return;
        out.unknown("cannot tell whether the host's " + conf_path +
                    " reaches the task because launchguard has no view "
                    "of the host (run it as the enroot hook, or pass --host-root)");
        return;
    }
    const HostView& host = *in.ctx.host;
    FileInfo info = host.files->stat(conf_path);
    if (info.kind == FileKind::unknown || info.kind == FileKind::unreadable) {
        out.unknown("cannot tell what the host's " + conf_path + " sets because it is " +
                    std::string(to_string(info.kind)) + (info.detail.empty() ? "" : " (" + info.detail + ")"));
        return;
    }
    if (info.kind != FileKind::regular) return;  // NCCL on the host reads no settings from it either
    auto text = host.files->read(conf_path);
    if (!text) {
        out.unknown("cannot tell what the host's " + conf_path + " sets because " + text.error().to_string());
        return;
    }
    nccl::ConfFile host_conf = nccl::parse_conf(conf_path, *text);

    std::vector<const HostValue*> missed;
    std::vector<const HostValue*> overridden;  // the task's environment chose another value on purpose
    std::vector<const HostValue*> undecided;
    auto values = first_nccl_entries(host_conf, in.nccl);
    for (const auto& value : values) {
        if (value.task != nullptr && value.task->value == value.entry->value) continue;
        if (value.task != nullptr && value.task->source == nccl::Source::environment) {
            overridden.push_back(&value);
        } else if (value.task == nullptr && !in.nccl.decided(value.entry->name)) {
            undecided.push_back(&value);
        } else {
            missed.push_back(&value);
        }
    }
    if (missed.empty()) {
        if (!undecided.empty()) {
            out.unknown("cannot tell whether the task gets " + undecided.front()->entry->name + " from the host's " +
                        conf_path + " because " + rules::env_unknown_reason(in.ctx, undecided.front()->entry->name));
        }
        return;
    }

    std::vector<std::string> assignments;
    bool critical = false;
    for (const HostValue* value : missed) {
        assignments.push_back(value->entry->name + "=" + value->entry->value);
        critical = critical || value->entry->name == kTopoVariable || value->entry->name == kHcaVariable;
    }
    std::string why_hidden = in.ctx.runtime == Runtime::enroot || in.ctx.runtime == Runtime::pyxis
                                 ? " (enroot does not mount /etc/nccl.conf)"
                                 : "";
    Finding& finding = out.fire("the host's " + conf_path + " sets " + rules::join(assignments) + " but the task" +
                                std::string(rules::where_task_runs(in.ctx.runtime)) + " does not get " +
                                (missed.size() == 1 ? "it" : "them") + why_hidden +
                                ": NCCL in the task runs without the host's settings");
    if (!critical) {
        finding.action = Action::warn;
        finding.severity = Severity::warning;
    }
    finding.fix_or_block = critical;

    finding.evidence.emplace_back("host_conf", conf_path);
    finding.evidence.emplace_back("host_view", host.files->describe());
    for (const HostValue* value : missed) {
        finding.evidence.emplace_back(value->entry->name, value->entry->value + " (host " + conf_path + ":" +
                                                              std::to_string(value->entry->line) +
                                                              "; task: " + task_state(value->task) + ")");
    }
    for (const HostValue* value : overridden) {
        finding.evidence.emplace_back(
            value->entry->name, value->entry->value + " (host " + conf_path + ":" + std::to_string(value->entry->line) +
                                    "; overridden by the task environment: '" + value->task->value + "')");
    }
    finding.evidence.emplace_back("task_conf_files", loaded_files(in.nccl));
    finding.evidence.emplace_back("runtime", std::string(to_string(in.ctx.runtime)));
    if (in.files) finding.evidence.emplace_back("container_view", in.files->describe());
    rules::add_container_evidence(finding, in.ctx);

    for (const HostValue* value : missed) {
        const std::string& name = value->entry->name;
        const std::string& host_value = value->entry->value;
        finding.remediation.push_back(RemediationOp::set_env(name, host_value));
        if (name != kTopoVariable || host_value.empty() || host_value.front() != '/') continue;
        // The variable alone would point at nothing: carry the file along.
        FileInfo on_host = host.files->stat(host_value);
        bool task_has_it = in.files && in.files->stat(host_value).kind == FileKind::regular;
        if (on_host.kind == FileKind::regular && !task_has_it) {
            std::string source = on_host.resolved_path.empty() ? host_value : on_host.resolved_path;
            finding.remediation.push_back(RemediationOp::mount_file(source, host_value));
        }
    }
}

// ---------------------------------------------------------------- conf.lint

// Entries are in line order: a binary search keeps linting a file of n
// lines O(n log n) (a linear search per issue made 40k lines take seconds).
const nccl::ConfEntry* entry_at(const nccl::ConfFile& file, int line) {
    auto it = std::lower_bound(file.entries.begin(), file.entries.end(), line,
                               [](const nccl::ConfEntry& e, int wanted) { return e.line < wanted; });
    return it == file.entries.end() || it->line != line ? nullptr : &*it;
}

// What the variable needs when no corrected value can be offered.
std::string wanted_value(const std::string& name) {
    if (nccl::is_integer_variable(name)) return "an integer value";
    return name == "NCCL_TOPO_FILE" ? "a path" : "a value";
}

// What to do with a line NCCL ignores because it names no variable.
constexpr std::string_view kNamelessFix =
    "remove the line, or write the name of the variable it was meant for before '='";

// "; write NAME=8" or, when no value can be offered, what to do instead.
std::string fix_text(const nccl::LintIssue& issue, std::string_view verb) {
    if (issue.name.empty()) return "; " + std::string(kNamelessFix);
    if (issue.corrected.empty()) return "; give " + issue.name + " " + wanted_value(issue.name) + ", or remove it";
    return "; " + std::string(verb) + " " + issue.corrected;
}

void report_conf_issue(RuleOutput& out, const nccl::ConfFile& file, const nccl::LintIssue& issue) {
    std::string location = file.path + ":" + std::to_string(issue.line);
    Finding& finding = out.fire(location + ": " + issue.problem + fix_text(issue, "write"));
    finding.evidence.emplace_back("location", location);
    if (const nccl::ConfEntry* entry = entry_at(file, issue.line)) {
        finding.evidence.emplace_back("as_written", entry->raw);
    }
    finding.evidence.emplace_back("problem", issue.problem);
    finding.evidence.emplace_back("corrected", issue.corrected);
    const std::string where = "in " + file.path + " line " + std::to_string(issue.line);
    finding.remediation = {RemediationOp::manual_step(issue.name.empty() ? where + ", " + std::string(kNamelessFix)
                                                      : issue.corrected.empty()
                                                          ? where + ", give " + issue.name + " " +
                                                                wanted_value(issue.name) + ", or remove the line"
                                                          : where + ", write: " + issue.corrected)};
}

void report_env_issue(RuleOutput& out, const nccl::LintIssue& issue, const std::string& value) {
    Finding& finding = out.fire("environment " + issue.name + ": " + issue.problem + fix_text(issue, "set"));
    finding.evidence.emplace_back("location", "environment");
    finding.evidence.emplace_back("as_written", issue.name + "=" + value);
    finding.evidence.emplace_back("problem", issue.problem);
    finding.evidence.emplace_back("corrected", issue.corrected);
    if (issue.corrected.empty()) {
        finding.remediation = {
            RemediationOp::manual_step("give " + issue.name + " " + wanted_value(issue.name) + ", or unset it")};
        return;
    }
    auto equals = issue.corrected.find('=');
    std::string corrected_value = equals == std::string::npos ? "" : issue.corrected.substr(equals + 1);
    finding.remediation = {RemediationOp::set_env(issue.name, corrected_value)};
}

// NCCL_CONF_FILE is read from the process environment before any file is
// loaded; set inside a file it does nothing.
void lint_conf_file_variable(RuleOutput& out, const nccl::ConfFile& file) {
    for (const auto& entry : file.entries) {
        if (entry.name != "NCCL_CONF_FILE") continue;
        std::string location = file.path + ":" + std::to_string(entry.line);
        Finding& finding = out.fire(location +
                                    ": NCCL_CONF_FILE inside a conf file has no effect: NCCL reads it "
                                    "from the process environment before it loads any file");
        finding.evidence.emplace_back("location", location);
        finding.evidence.emplace_back("as_written", entry.raw);
        finding.remediation = {RemediationOp::manual_step(
            "remove line " + std::to_string(entry.line) + " from " + file.path +
            " and set NCCL_CONF_FILE in the task environment instead, if that file is wanted")};
    }
}

// NCCL_CONF_FILE replaces $HOME/.nccl.conf; naming a file the task cannot
// read loses both, silently.
void lint_conf_file_target(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* setting = in.nccl.get("NCCL_CONF_FILE");
    if (setting == nullptr || setting->source != nccl::Source::environment || setting->value.empty()) return;
    if (!in.files || setting->value.front() != '/') return;
    FileInfo info = in.files->stat(setting->value);
    if (info.kind == FileKind::regular) return;
    if (info.kind == FileKind::unknown) {
        out.unknown("cannot tell whether NCCL_CONF_FILE=" + setting->value + " is readable in the task because " +
                    (info.detail.empty() ? "the view cannot tell" : info.detail));
        return;
    }
    Finding& finding = out.fire("NCCL_CONF_FILE=" + setting->value + " is " + std::string(to_string(info.kind)) +
                                " in the task: NCCL skips it, and $HOME/.nccl.conf too, without a message");
    finding.evidence.emplace_back("NCCL_CONF_FILE", setting->value);
    finding.evidence.emplace_back("source", setting->origin);
    finding.evidence.emplace_back("found", std::string(to_string(info.kind)));
    finding.evidence.emplace_back("container_view", in.files->describe());
    finding.remediation = {RemediationOp::manual_step("mount the file NCCL_CONF_FILE names into the container at " +
                                                      setting->value + ", or unset NCCL_CONF_FILE")};
}

void check_lint(const RuleInput& in, RuleOutput& out) {
    for (const auto& file : in.nccl.loaded) {
        for (const auto& issue : nccl::lint_conf(file)) report_conf_issue(out, file, issue);
        lint_conf_file_variable(out, file);
    }
    if (!in.ctx.env) {
        out.unknown("cannot lint NCCL_* values in the task environment because it is unknown (" + in.ctx.env.reason() +
                    ")");
        return;
    }
    for (const auto& [name, value] : in.ctx.env.value()) {
        if (!name.starts_with("NCCL_")) continue;
        for (const auto& issue : nccl::lint_value("environment", 0, name, value)) report_env_issue(out, issue, value);
    }
    lint_conf_file_target(in, out);
}

// ---------------------------------------------------------------- the rules

const TableRule kHostNotVisible{
    RuleInfo{
        .id = "conf.host-not-visible",
        .title = "Host nccl.conf settings missing in the task",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeCli,
        .nccl_only = true,
        .checks = "With a view of the host (the enroot hook, or the CLI with --host-root): every NCCL_* variable "
                  "the host's /etc/nccl.conf sets must have the same effective value in the task, from the task's "
                  "own conf files or its environment. A different value set in the task's environment counts as a "
                  "deliberate override. Blocks when the missed values include NCCL_TOPO_FILE or NCCL_IB_HCA, warns "
                  "otherwise. Without a host view, container launches are reported as unknown.",
        .why = "NCCL reads /etc/nccl.conf from the filesystem it runs in. enroot and pyxis bind-mount only hosts, "
               "hostname, resolv.conf and machine-id from the host's /etc, and a pod sees its image's /etc, so "
               "images that configure NCCL through the host file lose those settings in every container without a "
               "message. Azure's ND images set NCCL_TOPO_FILE, NCCL_IB_PCI_RELAXED_ORDERING and "
               "NCCL_IGNORE_CPU_AFFINITY this way (field case 4).",
        .evidence = "Each missed variable with the host's value and line and what the task has instead, values the "
                    "task overrides, the conf files the task loads, the runtime and both views.",
        .fix = "Set each missed variable in the task environment (the enroot hook and the SPANK plugin apply these), "
               "or mount the host's /etc/nccl.conf read-only into the container. When NCCL_TOPO_FILE is among them "
               "the topology file has to be mounted too; launchguard proposes that mount.",
    },
    check_host_not_visible};

const TableRule kLint{
    RuleInfo{
        .id = "conf.lint",
        .title = "nccl.conf line or NCCL_* value that NCCL misreads",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "Every line of the conf files NCCL loads for the task (NCCL_CONF_FILE or ~/.nccl.conf, then "
                  "/etc/nccl.conf) and every NCCL_* value in the task environment, against NCCL's literal parser: "
                  "spaces around '=', an 'export' prefix or leading whitespace, quotes, inline '# comments', and "
                  "integer variables written with a size suffix or as text (NCCL_BUFFSIZE=8M). Also NCCL_CONF_FILE "
                  "set inside a conf file, and NCCL_CONF_FILE naming a file the task cannot read. One finding per "
                  "issue.",
        .why = "NCCL's setEnvFile trims nothing and removes no quotes: 'NCCL_IB_HCA = mlx5' sets a variable named "
               "'NCCL_IB_HCA ' that nothing reads, and NCCL_SOCKET_IFNAME=\"eth0\" matches no interface. Integers go "
               "through strtoll, so NCCL_BUFFSIZE=8M is 8 bytes and 'four' is 0. When NCCL_CONF_FILE is set NCCL "
               "does not read ~/.nccl.conf, even if the named file is missing. None of this is reported by NCCL.",
        .evidence = "Where (file:line, or environment), the line as written, what NCCL makes of it, and the "
                    "corrected line.",
        .fix = "Write the corrected line shown in the conf file; for environment values launchguard proposes the "
               "corrected value.",
    },
    check_lint};

}  // namespace

void register_conf_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kHostNotVisible);
    rules.push_back(&kLint);
}

}  // namespace launchguard
