// Which collective library a launch's processes use, as far as its spec
// shows: PyTorch's process group backend ("nccl", "gloo", "mpi"), chosen on
// the command line (`--backend gloo`), in the code a `python -c` runs
// (`dist.init_process_group("gloo")`), or through a variable the command
// reads (`BACKEND=gloo` with `--backend $BACKEND`). NCCL rules judge NCCL; a
// launch that shows it uses another backend is not theirs to judge.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "context/fact.h"
#include "context/launch_context.h"

namespace launchguard {

// Known when the command selects a backend; nccl wins over any other named
// beside it (a gloo group for CPU tensors next to NCCL is common). Unknown
// when the command selects none (the program decides: PyTorch's default for
// CUDA tensors is NCCL). `words` are the command's words after expansion
// (a `bash -c` script is one word); `env` is what the command sees.
Fact<CommBackend> comm_backend_from_command(const std::vector<std::string>& words, const Environment& env,
                                            const std::string& where);

}  // namespace launchguard
