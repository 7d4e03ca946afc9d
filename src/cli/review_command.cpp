// `launchguard review FILE [--kind slurm|kubernetes]`: the submitter's dry
// run. Reads the file (bounded), decides what kind of spec it is, and hands
// it to that kind's reviewer.
#include <fstream>
#include <iterator>
#include <memory>

#include "cli/command.h"
#include "cli/review.h"
#include "slurm_script/batch_script.h"

namespace launchguard::cli {
namespace {

// Kubernetes manifests are YAML or JSON objects with an apiVersion.
bool looks_like_manifest(const std::string& text) {
    auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') return true;
    return text.find("apiVersion:") != std::string::npos;
}

int run_review(const ReviewArgs& args) {
    std::ifstream in(args.file, std::ios::binary);
    if (!in) return bad_input(args.file + ": cannot open the file");
    // One byte more than any reviewer accepts, so "too large" is told apart from "just fits".
    std::string text(slurm_script::kMaxScriptBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));

    std::string kind = args.kind;
    if (kind == "auto") {
        if (slurm_script::looks_like_batch_script(text)) {
            kind = "slurm";
        } else if (looks_like_manifest(text)) {
            kind = "kubernetes";
        } else {
            return bad_input(args.file + ": neither a Slurm batch script (no '#!' first line, no #SBATCH line) nor "
                             "a Kubernetes manifest (no apiVersion); pass --kind slurm or --kind kubernetes");
        }
    }
    if (kind == "kubernetes") {
        return bad_input(args.file + ": reviewing Kubernetes manifests is not built yet; `launchguard review` "
                         "judges Slurm batch scripts (--kind slurm)");
    }
    return review_slurm_script(args, text);
}

}  // namespace

void add_review_command(CLI::App& app, CommandRunner& runner) {
    auto args = std::make_shared<ReviewArgs>();
    CLI::App* cmd = app.add_subcommand(
        "review", "Judge a launch from its spec before it runs: a Slurm batch script (Kubernetes manifests: not yet)");
    cmd->add_option("file", args->file, "The spec: a Slurm batch script (#!/#SBATCH)")->required();
    cmd->add_option("--kind", args->kind, "auto, slurm or kubernetes")
        ->check(CLI::IsMember({"auto", "slurm", "kubernetes"}))
        ->capture_default_str();
    cmd->add_option("--profile", args->profile, "Embedded profile name or a profile YAML file")->capture_default_str();
    cmd->add_option("--mode", args->mode, "enforce, patch or warn")->capture_default_str();
    cmd->add_option("--format", args->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->add_flag("--patched", args->patched, "Print the spec with the fixes it can carry applied");
    cmd->callback([&runner, args] { runner = [args] { return run_review(*args); }; });
}

}  // namespace launchguard::cli
