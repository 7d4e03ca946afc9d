// `launchguard node-check --slurm`: Slurm's HealthCheckProgram. slurmd runs
// it on every node every HealthCheckInterval with no arguments and only
// SLURMD_NODENAME in the environment, waits for it, and kills it after 60 s.
// It drains its node on a blocking finding, resumes only the drains it set
// itself, and leaves every other drain and DOWN node alone (node/slurm_node.h
// decides; this file runs scontrol and logs). Every line it logs goes to
// syslog, stderr and, when configured, a log file.
#include <syslog.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>

#include "cli/command.h"
#include "cli/node_check.h"
#include "node/slurm_node.h"
#include "util/child_process.h"
#include "util/text_escape.h"

namespace launchguard::cli {
namespace {

// Each scontrol call is bounded on its own; with the check's own bound
// (at most kMaxNodeCheckTimeoutSeconds) the total stays under slurmd's 60 s.
constexpr std::chrono::seconds kScontrolTimeout{10};

class HealthLog {
public:
    explicit HealthLog(const std::optional<std::string>& file) {
        ::openlog("launchguard-node-check", LOG_PID, LOG_DAEMON);
        if (file) file_.open(*file, std::ios::app);
        if (file && !file_) error("cannot open the log file " + *file + ": logging to syslog and stderr only");
    }
    ~HealthLog() { ::closelog(); }
    HealthLog(const HealthLog&) = delete;
    HealthLog& operator=(const HealthLog&) = delete;

    void info(const std::string& line) { write(LOG_INFO, "info", line); }
    void warning(const std::string& line) { write(LOG_WARNING, "warning", line); }
    void error(const std::string& line) { write(LOG_ERR, "error", line); }

private:
    void write(int priority, const char* level, const std::string& raw) {
        const std::string line = printable_text(raw);
        ::syslog(priority, "%s", line.c_str());
        std::cerr << "launchguard node-check: " << level << ": " << line << "\n";
        if (file_) {
            char stamp[32] = {};
            std::time_t now = std::time(nullptr);
            std::tm tm{};
            ::gmtime_r(&now, &tm);
            std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
            file_ << stamp << " " << level << ": " << line << std::endl;
        }
    }
    std::ofstream file_;
};

std::string short_host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
    std::string host(name);
    return host.substr(0, host.find('.'));
}

// The configuration's node-name was checked when it was read; the
// environment and the host name are checked here, and an error names the
// source, since scontrol would act on whatever nodes the text names.
Result<std::string> node_name(const NodeCheckConfig& config) {
    if (config.node_name) return *config.node_name;
    std::string name;
    std::string source;
    if (const char* env = std::getenv("SLURMD_NODENAME"); env != nullptr && *env != '\0') {
        name = env;
        source = "$SLURMD_NODENAME";
    } else {
        name = short_host_name();
        source = "the host name (no $SLURMD_NODENAME, no node-name in the configuration)";
    }
    if (auto checked = check_slurm_node_name(name); !checked) {
        return make_error(source + " '" + name + "' " + checked.error().message);
    }
    return name;
}

// slurmd gives the program no PATH: look where Slurm's packages put scontrol.
std::optional<std::string> find_scontrol(const NodeCheckConfig& config) {
    if (config.scontrol) return config.scontrol;
    std::string dirs;
    if (const char* path = std::getenv("PATH"); path != nullptr) dirs = std::string(path) + ":";
    dirs += "/usr/bin:/usr/local/bin:/usr/sbin:/opt/slurm/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        std::size_t colon = dirs.find(':', start);
        if (colon == std::string::npos) colon = dirs.size();
        std::string dir = dirs.substr(start, colon - start);
        start = colon + 1;
        if (dir.empty() || dir.front() != '/') continue;
        std::string candidate = dir + "/scontrol";
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return std::nullopt;
}

Result<ProgramResult> scontrol(const std::string& binary, const NodeCheckConfig& config,
                               std::vector<std::string> args) {
    args.insert(args.begin(), binary);
    std::vector<std::string> env;
    if (config.slurm_conf) env.push_back("SLURM_CONF=" + *config.slurm_conf);
    return run_program(args, env, kScontrolTimeout);
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string milliseconds(std::chrono::duration<double> d) {
    return std::to_string(static_cast<long long>(d.count() * 1000.0 + 0.5)) + " ms";
}

void log_verdict(HealthLog& log, const std::string& node, const TimedRun& timed) {
    const NodeCheckRun& run = timed.run;
    log.info("node " + node + ": " + std::string(to_string(run.verdict.health)) + " (" +
             std::to_string(run.verdict.rules.size()) + " rules, " + milliseconds(timed.duration) + ")");
    for (const auto& rule : run.verdict.rules) {
        if (rule.outcome == RuleOutcome::block)
            log.error("block " + rule.rule + ": " + rule.message);
        else if (rule.outcome == RuleOutcome::warn)
            log.warning("warn " + rule.rule + ": " + rule.message);
    }
    for (const auto& note : run.notes) log.warning(note);
    if (run.verdict.health == NodeHealth::unknown) log.error("node check unknown: " + run.verdict.problem);
}

// Reads the node's state and applies the plan; logs every step.
void act_on_node(HealthLog& log, const NodeCheckConfig& config, const std::string& node, const NodeVerdict& verdict) {
    auto binary = find_scontrol(config);
    if (!binary) {
        log.error("scontrol not found (set scontrol = /path/to/scontrol in the configuration): node state unchanged");
        return;
    }
    auto shown = scontrol(*binary, config, {"show", "node", node, "--oneliner"});
    if (!shown || shown->exit_code != 0) {
        log.error("cannot read the state of node " + node + ": " +
                  (shown ? first_line(shown->output) : shown.error().message) + "; node state unchanged");
        return;
    }
    auto state = parse_scontrol_node(shown->output);
    if (!state) {
        log.error(state.error().message + "; node state unchanged");
        return;
    }
    const SlurmNodePlan plan = plan_slurm_node(*state, verdict, config.on_unknown);
    if (plan.action == SlurmNodeAction::none) {
        log.info("node " + node + ": " + plan.why);
        return;
    }
    auto updated = scontrol(*binary, config, scontrol_update_args(node, plan));
    if (!updated || updated->exit_code != 0) {
        log.error("scontrol update failed for node " + node + ": " +
                  (updated ? first_line(updated->output) : updated.error().message));
        return;
    }
    if (plan.action == SlurmNodeAction::drain)
        log.error("node " + node + " drained: \"" + plan.reason + "\" (" + plan.why + ")");
    else
        log.info("node " + node + " resumed: " + plan.why);
}

}  // namespace

int run_slurm_health_check(const NodeCheckConfig& config) {
    HealthLog log(config.log_file);
    const auto named = node_name(config);
    if (!named) {
        // Nothing is checked or changed for a node that cannot be named;
        // slurmd logs a failing health check's stdout: say it there too.
        log.error(named.error().message + ": node state unchanged");
        std::cout << "launchguard node-check: " << printable_text(named.error().message) << "\n";
        return kExitBadInput;
    }
    const std::string& node = *named;
    NodeCheckRequest request;
    request.profile = config.profile;
    request.options = config.options;
    request.record = config.record_dir.has_value() || config.metrics_file.has_value();
    request.node_class = config.node_class;
    const TimedRun timed = run_timed(request, config.timeout);
    log_verdict(log, node, timed);

    int code = exit_code_for(timed.run.verdict.health);
    if (config.metrics_file) {
        if (auto failed = write_metrics(*config.metrics_file, config, timed)) {
            log.error(*failed);
            if (code != kExitBlock) code = kExitBadInput;
        }
    }
    if (config.record_dir) {
        if (auto failed = write_record(*config.record_dir, config, timed)) {
            log.error(*failed);
            if (code != kExitBlock) code = kExitBadInput;
        }
    }
    const bool may_act = config.options.mode != Mode::off &&
                         (timed.run.verdict.health != NodeHealth::unknown || config.on_unknown == OnUnknown::drain);
    if (may_act) {
        act_on_node(log, config, node, timed.run.verdict);
    } else if (config.options.mode != Mode::off) {
        // Said without asking scontrol: nothing could change the plan.
        log.info("node " + node + ": check unknown: node state left as it is (on-unknown = keep)");
    }
    // slurmd logs the output of a health check that exits non-zero.
    std::cout << npd_message(timed.run.verdict, 200) << "\n";
    return code;
}

}  // namespace launchguard::cli
