// `launchguard check --fix`: the remediation as shell exports and launcher
// flags a user can paste (srun/pyxis, enroot, docker), plus manual steps.
#pragma once

#include <string>

#include "engine/engine.h"

namespace launchguard {

std::string render_fix_script(const Report& report);
// POSIX shell single-quoting, always: the one way a value reaches the script.
std::string shell_quote(std::string_view value);

}  // namespace launchguard
