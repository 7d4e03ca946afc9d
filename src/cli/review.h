// `launchguard review FILE`: judge the spec of a launch before it runs. One
// function per kind of spec; review_command.cpp picks the kind and owns the
// shared options.
#pragma once

#include <string>

namespace launchguard::cli {

struct ReviewArgs {
    std::string file;
    std::string kind = "auto";     // auto, slurm, kubernetes
    std::string profile = "default";
    std::string mode = "enforce";
    std::string format = "text";
    bool patched = false;          // print the spec with the fixes applied
};

// A Slurm batch script (review_slurm.cpp); `text` is the file's content.
int review_slurm_script(const ReviewArgs& args, const std::string& text);

}  // namespace launchguard::cli
