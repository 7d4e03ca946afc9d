// `launchguard review job.sbatch`: prints the review of a batch script with
// the same report, JSON and exit codes as `check`, plus the fixes in the
// script's own terms, or the script with them applied (--patched).
#include <algorithm>
#include <iostream>

#include <boost/json.hpp>

#include "cli/command.h"
#include "cli/review.h"
#include "profile/profile.h"
#include "report/json_report.h"
#include "report/text_report.h"
#include "slurm_script/script_review.h"
#include "util/text_escape.h"

namespace launchguard::cli {
namespace {

using slurm_script::StepReview;

std::string step_summary(const StepReview& step) {
    const LaunchContext& ctx = step.launch.context;
    std::string out = step.launch.label + ": " + std::string(to_string(ctx.runtime));
    if (ctx.container.image) out += " image " + ctx.container.image.value();
    out += ", nodes " + (ctx.job.nodes ? std::to_string(ctx.job.nodes.value()) : std::string("unknown"));
    out += ", GPUs " + (ctx.job.total_gpus ? std::to_string(ctx.job.total_gpus.value()) : std::string("unknown"));
    return out;
}

// What the file was read as, and what of a batch script it holds: a file
// with a #! line and nothing of Slurm's is judged as one batch step, which
// the reader should know was a guess.
std::string taken_for(const slurm_script::ScriptReview& review) {
    const auto& script = review.script;
    if (script.directives.empty() && script.steps.empty()) {
        return "taken for a Slurm batch script, but it has no #SBATCH line and runs no srun: judged as a single "
               "batch step with Slurm's defaults (--kind chooses what a file is read as)";
    }
    auto mpi_alone = static_cast<std::size_t>(
        std::count_if(script.steps.begin(), script.steps.end(), [](const auto& step) { return !step.srun; }));
    std::string mpi = mpi_alone == 0 ? "" : ", " + std::to_string(mpi_alone) + " MPI launcher step(s) without srun";
    return "Slurm batch script, " + std::to_string(script.directives.size()) + " #SBATCH option(s), " +
           std::to_string(script.steps.size() - mpi_alone) + " srun step(s)" + mpi + "; " +
           std::to_string(review.steps.size()) + " launch(es) judged";
}

boost::json::object spec_json(const ReviewInput& input, const slurm_script::ScriptReview& review) {
    boost::json::object spec;
    spec["kind"] = "slurm";
    spec["file"] = input.origin;
    spec["taken_for"] = taken_for(review);
    boost::json::array steps;
    for (const auto& step : review.steps) {
        boost::json::object s;
        s["line"] = step.launch.line;
        s["label"] = step.launch.label;
        s["runtime"] = to_string(step.launch.context.runtime);
        s["summary"] = step_summary(step);
        boost::json::array fixes;
        for (const auto& op : step.fixes.ops) fixes.emplace_back(slurm_script::fix_in_script_terms(op, step.fixes));
        s["fixes"] = std::move(fixes);
        steps.push_back(std::move(s));
    }
    spec["steps"] = std::move(steps);
    return spec;
}

}  // namespace

int review_slurm_script(const ReviewInput& input, const ReviewSettings& settings) {
    if (settings.print_patch) {
        return bad_input(input.origin +
                         ": --patch prints a JSON Patch for Kubernetes manifests; for a batch script "
                         "use --patched");
    }
    auto review = slurm_script::review_script(input.text, input.origin, *settings.profile, settings.mode);
    if (!review) return bad_input(review.error().to_string());
    const Report& report = review->report;

    if (settings.print_patched) {
        auto patched = slurm_script::patched_script(review.value());
        if (!patched) return bad_input(patched.error().to_string());
        std::cout << patched.value();
        if (review->script.crlf) {
            std::cerr << printable_text(input.origin)
                      << ": the script has CR LF (DOS) line breaks, kept in the patched script; sbatch refuses "
                         "such a script: convert it to LF line breaks (dos2unix) before submitting\n";
        }
    } else if (settings.format == "json") {
        boost::json::object out = report_to_json(report).as_object();
        out["spec"] = spec_json(input, review.value());
        std::cout << pretty_json(out);
    } else {
        std::cout << printable_text(input.origin) << ": " << taken_for(review.value()) << "\n";
        if (review->script.crlf) {
            // Not an unknown: sbatch refuses the script as it is, so it leads.
            std::cout << "  the script has CR LF (DOS line breaks): sbatch refuses it; convert it to LF line "
                         "breaks (dos2unix) before submitting\n";
        }
        for (const auto& step : review->steps) std::cout << "  " << printable_text(step_summary(step)) << "\n";
        std::cout << render_text(report, TextStyle{stdout_is_terminal()}, ReportScope{true, settings.verbose, {}});
        bool header = false;
        for (const auto& step : review->steps) {
            for (const auto& op : step.fixes.ops) {
                if (!header) {
                    std::cout << "fixes in the script's terms (--patched applies the export, unset and "
                                 "--container-mounts ones):\n";
                    header = true;
                }
                std::cout << "  " << printable_text(slurm_script::fix_in_script_terms(op, step.fixes)) << "\n";
            }
        }
    }
    return exit_code_for(report.decision);
}

}  // namespace launchguard::cli
