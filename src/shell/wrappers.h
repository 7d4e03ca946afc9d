// The commands that start another command with a changed environment or
// none (env, timeout, nohup, command, stdbuf, nice, time, exec, sudo), read
// as a shell user writes them in front of a launcher (`env -u X srun ...`,
// `timeout 2h srun ...`) or of a program (`srun env NCCL_DEBUG=INFO python`).
// One list for every front end, so a wrapper learnt once is seen everywhere.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shell/interpreter.h"

namespace launchguard::shell {

// How a wrapper changes the environment of what it runs (`env -i`,
// `env -u X`, `env X=1`, `sudo` without -E).
struct EnvEdit {
    enum class Kind { clear, unset, set, unknown };
    Kind kind = Kind::set;
    std::string name;
    Word value;           // for set
    std::string wrapper;  // "env", "sudo", "exec -c": for notes and origins
};

// Where the wrapped command starts, and what the wrappers do to its environment.
struct Wrapped {
    std::size_t program = 0;  // index of the first word after the wrappers (words.size() when none)
    std::vector<EnvEdit> edits;
};

// env, timeout, nohup, command, stdbuf, nice, time, exec, sudo (by any path).
bool is_wrapper(std::string_view name);

// A shell builtin or a coreutils-style command (rm, mkdir, cp, echo,
// hostname, nvidia-smi, sleep, by any path): a program that starts no
// collective library, so rules that judge NCCL have nothing to judge in it.
bool is_plain_utility(std::string_view name);
// Does a `sh -c` script run only such commands (`echo $(hostname)`), its
// command substitutions included? False for anything it cannot tell.
bool runs_only_utilities(std::string_view script);

// Skips the wrappers from words[from] on; nullopt when they run nothing the
// text shows (`command -v srun` looks srun up, `env -S '...'` splits a string).
// An unknown word ends the wrappers: it is the program, as far as the text tells.
std::optional<Wrapped> skip_wrappers(const std::vector<Word>& words, std::size_t from = 0);

}  // namespace launchguard::shell
