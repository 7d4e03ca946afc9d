// What a container's command and args tell about its launch, read the way
// a shell would run them by the shared shell reader (shell/interpreter.h,
// which reads Slurm batch scripts too): `export NAME=value`, `NAME=value
// cmd`, wrappers (`env X=1 prog`), blocks whose conditions it decides or
// not, what may set any variable (`source`, `module load`, `eval`), plus what
// the launchers mean: `mpirun -x` (Open MPI) and `-genv` (MPICH, Intel MPI),
// and the torchrun flags that decide the job's shape. Real manifests set
// most NCCL variables here rather than in `env`. Nothing is executed: a
// value that needs an expansion ($VAR, $(cmd)) is unknown, never guessed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "context/launch_context.h"
#include "shell/mpi_launcher.h"
#include "shell/pattern.h"

namespace launchguard::kubernetes {

struct ShellAssignment {
    std::string name;
    std::optional<std::string> value;  // nullopt: needs an expansion, or `-x NAME` (forwarded)
    bool forwarded = false;            // `mpirun -x NAME`: the launcher's own value
    // The value with its $NAME / ${NAME} references, when those are all it
    // needs: expand_variables resolves it against the environment it runs in.
    std::optional<std::string> pattern;
    std::string origin;       // "export on line 2", "mpirun -x NCCL_IB_HCA=mlx5" as written
    std::string why_unknown;  // for a value that is neither known nor a pattern: the construct
};

// Where an option for every rank goes on the one MPI launcher a container
// runs: right after the launcher's own options, before its program.
struct MpiOptionsPlace {
    shell::MpiLaunch launch;
    std::size_t word = 0;  // index into command followed by args
    // Within that word, the `sh -c` script it is: the byte offset where the
    // options go; nullopt: a new argv word goes at `word`.
    std::optional<std::size_t> offset;
};

struct ShellLaunch {
    // Variables the container's own processes get, in the order written.
    std::vector<ShellAssignment> exports;
    // Constructs that may set any variable, each with its line in the script:
    // "line 3: source /etc/nccl-env.sh may set any variable".
    std::vector<std::string> open_sources;
    // What the reader could not follow.
    std::vector<std::string> notes;
    // What an MPI launcher passes to every rank, local and on the workers.
    std::vector<ShellAssignment> rank_exports;
    std::optional<int> mpi_ranks;             // mpirun -np N
    std::optional<int> torch_nnodes;          // torchrun --nnodes N (a range stays unknown)
    std::optional<int> torch_nproc_per_node;  // torchrun --nproc-per-node N
    bool runs_mpi = false;
    std::size_t mpi_launches = 0;
    // Set only when the container runs one MPI launcher, in its argv or in
    // the `sh -c` script its argv runs (not one nested deeper), and its
    // options end where an option can be added.
    std::optional<MpiOptionsPlace> mpi_place;
};

// `command` and `args` as the container spec lists them; a shell's `-c`
// script is read as the script it is.
ShellLaunch read_shell_launch(const std::vector<std::string>& command, const std::vector<std::string>& args);

// `pattern` with $NAME and ${NAME} replaced from `env` (shell::expand_pattern).
// A name `env` lacks leaves the result unknown, since the image's own ENV may
// set it; so does any other expansion ($(cmd), ${X:-y}, $1).
inline std::optional<std::string> expand_variables(std::string_view pattern, const Environment& env) {
    return shell::expand_pattern(pattern, env);
}

}  // namespace launchguard::kubernetes
