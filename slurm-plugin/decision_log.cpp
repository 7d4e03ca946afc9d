#include "decision_log.h"

#include <unistd.h>

#include "pyxis.h"
#include "report/text_report.h"

namespace launchguard::slurm {

std::string decision_line(const DecisionSite& site, const Report& report) {
    std::string patched;
    for (const auto& op : report.patch) {
        if (!op.name.empty()) patched += (patched.empty() ? "" : ",") + op.name;
    }
    return "decision hook=" + site.hook + " job=" + site.job + " step=" + site.step + " node=" + site.node +
           " profile=" + report.profile + " mode=" + std::string(to_string(report.mode)) +
           " decision=" + std::string(to_string(report.decision)) +
           " blocked=" + rules_with_action(report, Action::block) +
           " patched=" + rules_with_action(report, Action::patch) +
           " warned=" + rules_with_action(report, Action::warn) + " env=" + (patched.empty() ? "-" : patched) +
           " unknown=" + std::to_string(report.unknowns.size());
}

std::string user_message(const Report& report, Runtime runtime) {
    std::string out;
    for (const auto& f : report.findings) {
        std::string label = action_label(f.action);
        label.resize(6, ' ');  // "WARN  " lines up with "BLOCK "
        out += label + f.rule + ": " + f.message;
        std::string fix;
        if (runtime == Runtime::pyxis) {
            fix = pyxis_fix(f.remediation);
        } else {
            fix = describe_remediations(f.remediation);
        }
        if (!fix.empty()) out += " -> fix: " + fix;
        out += "\n";
    }
    out += "profile " + report.profile + ", mode " + std::string(to_string(report.mode)) + ": " +
           (report.decision == Decision::block   ? "launch blocked (see `launchguard explain <rule>`)"
            : report.decision == Decision::patch ? "environment patched, launch continues"
                                                 : "launch continues");
    return out + "\n";
}

std::string short_hostname() {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
    const std::string host(name);
    return host.substr(0, host.find('.'));
}

}  // namespace launchguard::slurm
