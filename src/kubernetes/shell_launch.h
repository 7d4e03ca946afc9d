// What a container's command and args tell about its launch, read the way
// a shell would run them: `export NAME=value`, `NAME=value cmd`, sourced
// scripts, `mpirun -x` (Open MPI) and `-genv` (MPICH, Intel MPI), and the
// torchrun flags that decide the job's shape. Real manifests set most NCCL
// variables here rather than in `env`. Nothing is executed: a value that
// needs an expansion ($VAR, $(cmd)) is unknown, never guessed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "context/launch_context.h"

namespace launchguard::kubernetes {

struct ShellAssignment {
    std::string name;
    std::optional<std::string> value;  // nullopt: needs an expansion, or `-x NAME` (forwarded)
    bool forwarded = false;            // `mpirun -x NAME`: the launcher's own value
    // The value with its $NAME / ${NAME} references, when those are all it
    // needs: expand_variables resolves it against the environment it runs in.
    std::optional<std::string> pattern;
    std::string origin;  // "export NCCL_IB_HCA=mlx5" as written
};

struct ShellLaunch {
    // Variables the container's own processes get, in the order written.
    std::vector<ShellAssignment> exports;
    // Scripts the shell sources: they may set anything.
    std::vector<std::string> sourced;
    // What an MPI launcher passes to every rank, local and on the workers.
    std::vector<ShellAssignment> rank_exports;
    std::optional<int> mpi_ranks;             // mpirun -np N
    std::optional<int> torch_nnodes;          // torchrun --nnodes N (a range stays unknown)
    std::optional<int> torch_nproc_per_node;  // torchrun --nproc-per-node N
    bool runs_mpi = false;
};

// `command` and `args` as the container spec lists them; a shell's `-c`
// script is read as the script it is.
ShellLaunch read_shell_launch(const std::vector<std::string>& command, const std::vector<std::string>& args);

// `pattern` with $NAME and ${NAME} replaced from `env`. A name `env` lacks
// leaves the result unknown, since the image's own ENV may set it (an empty
// guess could invent a finding); so does any other expansion ($(cmd),
// ${X:-y}, $1).
std::optional<std::string> expand_variables(std::string_view pattern, const Environment& env);

}  // namespace launchguard::kubernetes
