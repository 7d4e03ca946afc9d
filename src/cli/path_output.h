// Printing NCCL's predicted paths (nccl/nccl_paths.h) for `topo --paths` and
// `check --paths`: a table per GPU, per GPU pair, and an `nvidia-smi topo -m`
// style matrix, or one JSON object.
#pragma once

#include <map>
#include <string>

#include "nccl/nccl_paths.h"

namespace launchguard::cli {

// The NCCL_* variables of the process environment, then of an env file
// (KEY=VALUE lines; the file wins). Returns an error message, "" on success.
std::string read_nccl_env(const std::string& env_file, std::map<std::string, std::string>& env);

void print_path_model(const nccl::PathModel& model, const std::string& source, const std::string& format);

}  // namespace launchguard::cli
