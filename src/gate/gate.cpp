// The gate's judgement: the live context of this process, the profile, the
// live rules, and the verdict the front end acts on.
#include "gate/gate.h"

#include <boost/json.hpp>
#include <cstdlib>
#include <utility>

#include "engine/engine.h"
#include "engine/profile_loader.h"
#include "probe/context_builder.h"
#include "probe/environment_probe.h"
#include "report/text_report.h"
#include "rules/rule.h"
#include "util/child_process.h"
#include "util/text_escape.h"

namespace launchguard {
namespace {

bool is_env_op(const RemediationOp& op) {
    return op.kind == RemediationOp::Kind::set_env || op.kind == RemediationOp::Kind::unset_env;
}

bool same_op(const RemediationOp& a, const RemediationOp& b) {
    return a.kind == b.kind && a.name == b.name && a.value == b.value;
}

std::string env_op_text(const RemediationOp& op) {
    return op.kind == RemediationOp::Kind::set_env ? op.name + "=" + op.value : "unset " + op.name;
}

// What is wrong and how to fix it: the text report, less the rules that
// could not decide (they block nothing and would crowd the 4096 bytes
// Kubernetes keeps of the message).
std::string block_report(const Report& report) {
    Report shown = report;
    shown.unknowns.clear();
    shown.not_applicable.clear();
    return render_text(shown, TextStyle{}) + "launchguard-gate did not start the workload (exit " +
           std::to_string(kGateBlockExitCode) + "); `launchguard explain RULE` says more about a rule\n";
}

GateVerdict verdict_for(const Report& report, bool check_only) {
    GateVerdict verdict;
    if (report.decision == Decision::block) {
        verdict.kind = GateVerdict::Kind::block;
        verdict.report = block_report(report);
        return verdict;
    }
    // In report order: a warning per warned finding; for a patched one, a
    // line per environment value the gate sets (each once: the engine's
    // patch list is deduplicated across rules).
    std::vector<const RemediationOp*> done;
    for (const Finding& f : report.findings) {
        if (f.action == Action::warn) {
            verdict.messages.push_back("launchguard: warning: " + f.rule + ": " + printable_text(f.message));
            continue;
        }
        if (f.action != Action::patch || report.decision != Decision::patch) continue;
        for (const RemediationOp& op : f.remediation) {
            if (!is_env_op(op)) continue;
            const RemediationOp* planned = nullptr;
            for (const RemediationOp& p : report.patch) {
                if (same_op(p, op)) planned = &p;
            }
            if (planned == nullptr) continue;
            bool seen = false;
            for (const RemediationOp* d : done) seen = seen || d == planned;
            if (seen) continue;
            done.push_back(planned);
            if (check_only) {
                verdict.messages.push_back("launchguard: warning: " + f.rule + ": " + printable_text(f.message) +
                                           " (not patched: the container is already running; set " +
                                           printable_text(env_op_text(op)) + " in its spec)");
            } else {
                verdict.env.push_back(op);
                verdict.messages.push_back("launchguard: patched: " + printable_text(env_op_text(op)) + " (" + f.rule +
                                           ")");
            }
        }
    }
    if (!verdict.env.empty())
        verdict.kind = GateVerdict::Kind::patch;
    else if (!verdict.messages.empty())
        verdict.kind = GateVerdict::Kind::warn;
    return verdict;
}

Result<GateVerdict> judge(const GateRunOptions& options, const StepNote& note, Environment environment) {
    note("loading the profile " + options.profile);
    auto profile = load_profile(options.profile);
    if (!profile) {
        // A file's error names the file already; a name's does not.
        const Error& e = profile.error();
        return make_error("profile " + (e.file.empty() ? options.profile + ": " : std::string()) + e.to_string());
    }

    note("reading the launch");
    ProbeOptions probe;
    probe.root = options.root;
    probe.sysfs_root = options.sysfs_root;
    probe.hwloc_xml = options.hwloc_xml;
    probe.cpus = options.cpus;
    probe.environment = std::move(environment);
    auto context = build_context(std::move(probe));
    if (!context) return make_error("cannot read the launch: " + context.error().to_string());

    note("evaluating the rules");
    EvaluationOptions evaluation;
    evaluation.mode = options.mode;
    evaluation.scopes = kScopeLive;
    // The gate sets environment values before exec and nothing else (not a
    // mount, /dev/shm or a capability: the container already exists).
    evaluation.applicable = {RemediationOp::Kind::set_env, RemediationOp::Kind::unset_env};
    return verdict_for(evaluate(*context, *profile, evaluation), options.check_only);
}

std::string_view kind_name(GateVerdict::Kind kind) {
    switch (kind) {
        case GateVerdict::Kind::allow:
            return "allow";
        case GateVerdict::Kind::warn:
            return "warn";
        case GateVerdict::Kind::patch:
            return "patch";
        case GateVerdict::Kind::block:
            return "block";
    }
    return "allow";
}

std::string encode_error(const Error& error) {
    boost::json::object out;
    out["error"] = error.to_string();
    return boost::json::serialize(out);
}

}  // namespace

Result<GateVerdict> judge_launch(const GateRunOptions& options) {
    return judge(
        options, [](std::string_view) {}, current_process_environment());
}

Result<GateVerdict> judge_launch_with_deadline(const GateRunOptions& options) {
    auto result = run_forked_with_deadline(
        [&options](const StepNote& note) {
            // The launch's environment, taken before the child's own settings
            // for hwloc's live discovery:
            // - no plugin: a static executable cannot safely load a shared
            //   object built against the image's C library (libhwloc.a reads
            //   HWLOC_PLUGINS_PATH; an empty one names no directory);
            // - no x86 backend: it binds the process to each CPU in turn to
            //   run CPUID, which the rules do not need (NUMA nodes, CPUs and
            //   PCI locality come from sysfs); 47 -> 36 ms a launch on the
            //   development VM (docs/performance.md).
            Environment environment = current_process_environment();
            ::setenv("HWLOC_PLUGINS_PATH", "", 1);
            ::setenv("HWLOC_COMPONENTS", "-x86", 1);
            auto verdict = judge(options, note, std::move(environment));
            return verdict ? encode_verdict(*verdict) : encode_error(verdict.error());
        },
        options.timeout);
    if (!result) return make_error("the check " + result.error().to_string());
    return decode_verdict(*result);
}

std::string encode_verdict(const GateVerdict& verdict) {
    boost::json::object out;
    out["kind"] = kind_name(verdict.kind);
    boost::json::array messages;
    for (const auto& m : verdict.messages) messages.emplace_back(m);
    out["messages"] = std::move(messages);
    boost::json::array env;
    for (const auto& op : verdict.env) {
        boost::json::object o;
        o["set"] = op.kind == RemediationOp::Kind::set_env;
        o["name"] = op.name;
        o["value"] = op.value;
        env.push_back(std::move(o));
    }
    out["env"] = std::move(env);
    out["report"] = verdict.report;
    return boost::json::serialize(out);
}

Result<GateVerdict> decode_verdict(std::string_view text) {
    boost::system::error_code ec;
    boost::json::value value = boost::json::parse(text, ec);
    const boost::json::object* o = ec ? nullptr : value.if_object();
    if (o == nullptr) return make_error("the check's verdict is not a JSON object");
    if (const auto* error = o->if_contains("error"); error != nullptr && error->is_string())
        return make_error(std::string(error->get_string()));
    const auto* kind = o->if_contains("kind");
    const auto* messages = o->if_contains("messages");
    const auto* env = o->if_contains("env");
    const auto* report = o->if_contains("report");
    if (kind == nullptr || !kind->is_string() || messages == nullptr || !messages->is_array() || env == nullptr ||
        !env->is_array() || report == nullptr || !report->is_string())
        return make_error("the check's verdict lacks kind, messages, env or report");
    GateVerdict verdict;
    bool known = false;
    for (auto k :
         {GateVerdict::Kind::allow, GateVerdict::Kind::warn, GateVerdict::Kind::patch, GateVerdict::Kind::block}) {
        if (kind->get_string() == kind_name(k)) {
            verdict.kind = k;
            known = true;
        }
    }
    if (!known) return make_error("the check's verdict has an unknown kind");
    for (const auto& m : messages->get_array()) {
        if (!m.is_string()) return make_error("the check's verdict has a message that is not a string");
        verdict.messages.emplace_back(m.get_string());
    }
    for (const auto& e : env->get_array()) {
        const auto* op = e.if_object();
        const auto* set = op == nullptr ? nullptr : op->if_contains("set");
        const auto* name = op == nullptr ? nullptr : op->if_contains("name");
        const auto* v = op == nullptr ? nullptr : op->if_contains("value");
        if (set == nullptr || !set->is_bool() || name == nullptr || !name->is_string() || v == nullptr ||
            !v->is_string())
            return make_error("the check's verdict has a malformed environment operation");
        verdict.env.push_back(
            set->get_bool() ? RemediationOp::set_env(std::string(name->get_string()), std::string(v->get_string()))
                            : RemediationOp::unset_env(std::string(name->get_string())));
    }
    verdict.report = std::string(report->get_string());
    return verdict;
}

std::string termination_message(std::string_view report) {
    if (report.size() <= kTerminationMessageMaxBytes) return std::string(report);
    constexpr std::string_view kCut = "\n[cut to the 4096 bytes Kubernetes keeps; the container's log has it all]\n";
    std::size_t end = kTerminationMessageMaxBytes - kCut.size();
    // Back up over continuation bytes (10xxxxxx) to the start of the
    // sequence the cut falls in, which is then left out whole.
    while (end > 0 && (static_cast<unsigned char>(report[end]) & 0xC0U) == 0x80U) --end;
    // End on a whole line when one ends in the last quarter.
    const std::size_t line = report.rfind('\n', end == 0 ? 0 : end - 1);
    if (line != std::string_view::npos && line >= end * 3 / 4) end = line;
    return std::string(report.substr(0, end)) + std::string(kCut);
}

}  // namespace launchguard
