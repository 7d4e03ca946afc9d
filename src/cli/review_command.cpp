// `launchguard review FILE...|-`: reads each input and hands it to the
// reviewer of its kind (`--kind`, else detected).
#include <iostream>
#include <iterator>

#include "cli/command.h"
#include "cli/review.h"
#include "engine/profile_loader.h"
#include "slurm_script/batch_script.h"
#include "util/input_file.h"

namespace launchguard::cli {
namespace {

struct ReviewArgs {
    std::vector<std::string> files;
    std::string kind = "auto";
    std::string profile = "default";
    std::string mode = "enforce";
    std::string format = "text";
    bool patch = false;
    bool patched = false;
    bool fix_blocking = false;
    bool verbose = false;
    std::string gate_image;
    std::string gate_on_error = "allow";
};

enum class SpecKind { kubernetes, slurm };

// Which reviewer reads an input when --kind does not say: a batch script
// starts with #! or carries #SBATCH lines; everything else is taken as
// manifests, whose reader says clearly what it cannot parse.
SpecKind detect_kind(const ReviewInput& input) {
    return slurm_script::looks_like_batch_script(input.text) ? SpecKind::slurm : SpecKind::kubernetes;
}

int run_review(const ReviewArgs& args) {
    auto mode = parse_mode(args.mode);
    if (!mode) return bad_input("--mode: expected enforce, patch or warn, got '" + args.mode + "'");
    if (args.patch && args.patched) return bad_input("--patch and --patched: choose one");
    auto profile = load_profile(args.profile);
    if (!profile) return bad_input("--profile: " + profile.error().to_string());

    std::vector<ReviewInput> inputs;
    for (const auto& file : args.files) {
        ReviewInput input;
        input.origin = file;
        if (file == "-") {
            // Bounded like every other input: one byte past the bound says "too large".
            std::string text(kMaxInputFileBytes + 1, '\0');
            std::cin.read(text.data(), static_cast<std::streamsize>(text.size()));
            text.resize(static_cast<std::size_t>(std::cin.gcount()));
            if (text.size() > kMaxInputFileBytes) return bad_input("-: standard input is larger than the input bound");
            input.text = std::move(text);
        } else {
            auto text = read_text_file(file);
            if (!text) return bad_input(text.error().to_string());
            input.text = std::move(text).value();
        }
        inputs.push_back(std::move(input));
    }

    ReviewSettings settings;
    settings.profile = &*profile;
    settings.mode = *mode;
    settings.format = args.format;
    settings.print_patch = args.patch;
    settings.print_patched = args.patched;
    settings.verbose = args.verbose;
    if (!args.gate_image.empty()) {
        settings.gate = kubernetes::GateOptions{args.gate_image, *kubernetes::parse_gate_on_error(args.gate_on_error)};
    }
    // Asking for the patch is the dry run of the mutating webhook, which
    // fixes the blocking findings its patch fully fixes.
    settings.fix_blocking = args.fix_blocking || args.patch || args.patched;

    std::vector<ReviewInput> kubernetes;
    int code = kExitAllow;
    for (auto& input : inputs) {
        SpecKind kind = detect_kind(input);
        if (args.kind == "kubernetes") kind = SpecKind::kubernetes;
        if (args.kind == "slurm") kind = SpecKind::slurm;
        switch (kind) {
            case SpecKind::kubernetes:
                kubernetes.push_back(std::move(input));
                break;
            case SpecKind::slurm:
                code = combine_exit_codes(code, review_slurm_script(input, settings));
                break;
        }
    }
    if (!kubernetes.empty()) code = combine_exit_codes(code, review_kubernetes(kubernetes, settings));
    return code;
}

}  // namespace

int combine_exit_codes(int a, int b) {
    auto rank = [](int code) {
        switch (code) {
            case kExitBadInput:
                return 3;
            case kExitBlock:
                return 2;
            case kExitPatch:
                return 1;
            default:
                return 0;
        }
    };
    return rank(a) >= rank(b) ? a : b;
}

void add_review_command(CLI::App& app, CommandRunner& runner) {
    auto args = std::make_shared<ReviewArgs>();
    CLI::App* cmd = app.add_subcommand(
        "review", "Review a launch spec before submitting it: Kubernetes manifests or a Slurm batch script");
    cmd->add_option(
           "files", args->files,
           "Manifests (YAML or JSON, several documents each), Slurm batch scripts (#!/#SBATCH), or - for stdin")
        ->required();
    cmd->add_option("--kind", args->kind, "What the inputs are: auto (detect), kubernetes or slurm")
        ->check(CLI::IsMember({"auto", "kubernetes", "slurm"}))
        ->capture_default_str();
    cmd->add_option("--profile", args->profile, "Embedded profile name or a profile YAML file")->capture_default_str();
    cmd->add_option("--mode", args->mode, "enforce, patch or warn")->capture_default_str();
    cmd->add_option("--format", args->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->add_flag("--patch", args->patch,
                  "Print the JSON Patch that fixes what can be fixed (the report goes to stderr)");
    cmd->add_flag("--patched", args->patched,
                  "Print the manifests with the patch applied (the report goes to stderr), or the batch script with "
                  "its fixes applied");
    cmd->add_flag(
        "--fix-blocking", args->fix_blocking,
        "Patch blocking findings the patch fully fixes, as the mutating webhook does (implied by --patch, --patched)");
    cmd->add_option("--gate-image", args->gate_image,
                    "Add the launch gate to GPU pods, from this image, as the mutating webhook does where the site "
                    "enables it (shown by --patch and --patched)");
    cmd->add_option("--gate-on-error", args->gate_on_error,
                    "With --gate-image: what the gate does when it cannot judge, allow or block")
        ->check(CLI::IsMember({"allow", "block"}))
        ->capture_default_str();
    cmd->add_flag("--unknown,-v,--verbose", args->verbose,
                  "List every unknown with its reason in the text report, which otherwise says them in one line "
                  "after the findings (JSON always lists them all)");
    cmd->callback([&runner, args] { runner = [args] { return run_review(*args); }; });
}

}  // namespace launchguard::cli
