// MPI launchers read as a shell user writes them in front of a program:
// Open MPI's mpirun (also mpiexec, orterun, and prterun of Open MPI 5) and
// the Hydra mpiexec of MPICH and Intel MPI (mpiexec.hydra, and mpirun or
// mpiexec where a Hydra option shows which one it is). What matters for a
// review is the program after the launcher's options, the environment each
// rank gets, and the shape the options state:
//
//   Open MPI   -x NAME (mpirun's own value), -x NAME=VALUE; --mca and its
//              kin take two words and change no variable; -np/-n/-c ranks,
//              -N/--npernode/--map-by ppr:N:node ranks per node,
//              -H/--host a list of hosts.
//   Hydra      -genv/-env NAME VALUE, -genvlist/-envlist A,B (their current
//              values), -genvnone/-envnone (no variable but those named),
//              -genvall/-envall (every variable: Hydra's default); -n/-np
//              ranks, -ppn/-perhost ranks per node, -hosts a list of hosts.
//
// One reader for every front end (batch scripts, container commands), so an
// option learnt once is read everywhere.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shell/interpreter.h"

namespace launchguard::shell {

// mpirun, mpiexec, mpiexec.hydra, orterun, prterun (by any path).
bool is_mpi_launcher(std::string_view word);

// What an MPI launcher does to the environment of its ranks, in order.
struct RankEnvEdit {
    enum class Kind {
        set,      // -x NAME=VALUE, -genv NAME VALUE
        forward,  // -x NAME, -genvlist NAME: the launcher's own value of NAME
        unset,    // -genvexcl NAME: not passed on
        clear     // -genvnone: only what the launcher names reaches the ranks
    };
    Kind kind = Kind::set;
    std::string name;
    Word value;           // for set
    std::string written;  // "-x NCCL_DEBUG=INFO", "-genv NCCL_DEBUG INFO": for origins
};

struct MpiLaunch {
    std::string launcher;     // "mpirun", as its base name
    bool hydra = false;       // a Hydra option was seen (-genv, -ppn, ...) or the name says mpiexec.hydra
    std::size_t program = 0;  // index of the program (words.size() when the options run to the end)
    // Index of the first word after the launcher's options: `program`, or the
    // `--` that ends them. An option added there is read as one of them; one
    // added after a `--` would be the program's.
    std::size_t options_end = 0;
    std::vector<RankEnvEdit> edits;
    std::optional<int> ranks;                // -np N
    std::optional<int> ranks_per_node;       // -N N, -ppn N, --map-by ppr:N:node
    std::optional<int> hosts;                // -H a,b / -hosts a,b: the number of hosts named
    bool hostfile = false;                   // --hostfile / -f: the hosts are in a file the text does not show
    std::vector<std::string> shape_options;  // the options that tell the shape, as written
    // False when the last option lacks its value(s) (`mpirun -genv NAME`):
    // an option added after it would be read as that value.
    bool complete = true;
};

// Reads the launcher at words[at] and its options; nullopt when words[at] is
// no MPI launcher. An unknown word among the options ends them: it is the
// program, as far as the text tells.
std::optional<MpiLaunch> read_mpi_launcher(const std::vector<Word>& words, std::size_t at);

// The launcher's own words for giving every rank NAME=VALUE, as an argv
// holds them: {"-x", "NAME=VALUE"} or {"-genv", "NAME", "VALUE"}.
std::vector<std::string> rank_env_words(const MpiLaunch& launch, const std::string& name, const std::string& value);

// The same as shell words (VALUE quoted as the shell needs): "-x NAME=VALUE"
// or "-genv NAME VALUE".
std::string rank_env_option(const MpiLaunch& launch, const std::string& name, const std::string& quoted_value);

// What the launcher's options write for NAME themselves ("-x NAME=1",
// "-genv NAME 1"), which nothing before the launcher can undo; "" when none.
std::string rank_env_written(const MpiLaunch& launch, const std::string& name);

}  // namespace launchguard::shell
