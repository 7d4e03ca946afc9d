// yaml-cpp 0.7 (Debian 12) never returns on some invalid YAML ("{a: b},",
// and the many variants a fuzzer finds in minutes, some well inside a
// document): it loops while allocating, gigabytes within seconds, so a
// three-line manifest or profile could take launchguard down. Input that
// may be hostile is first parsed in a child process with a time bound (and,
// outside sanitizer builds, a memory bound); only what that child survives
// reaches yaml-cpp in the caller. The pattern hwloc XML import uses too.
// Not in a multi-threaded process, where the child itself could deadlock
// (forked_child_may_run_library_code()).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "util/error.h"

namespace YAML {
class Node;
class Exception;
}  // namespace YAML

namespace launchguard {

inline constexpr unsigned kYamlParseSeconds = 10;

// Done when yaml-cpp finishes with `text` (a parse error is fine: the caller
// reports it with its line); an error naming `origin` when it loops, runs out
// of memory or crashes. A text that passed once is not checked again in this
// process (or its forked children). Done without a check in a process that
// has started threads.
Status check_yaml_terminates(std::string_view text, const std::string& origin);

// yaml-cpp shares the node an alias names, so a few hundred bytes of nested
// aliases (ten aliases of ten aliases of ...) parse into a small graph that
// expands to billions of nodes once converted or walked. A document that
// expands to more nodes than this, or nests deeper than kMaxYamlDepth once
// its aliases are followed, is refused before anything expands it.
inline constexpr std::size_t kMaxYamlNodes = 1'000'000;
inline constexpr std::size_t kMaxYamlDepth = 256;

// Done when the documents of one file together stay within kMaxYamlNodes,
// and each within kMaxYamlDepth, with their aliases (and merge keys)
// expanded; else an error naming `origin` and the line where the bound was
// passed. Counting stops at the bound, so the check itself costs at most
// kMaxYamlNodes steps, cycles included.
Status check_yaml_expansion(std::span<const YAML::Node> documents, const std::string& origin);

// A yaml-cpp exception as an error naming `origin` and its line, `what`
// first ("invalid YAML"); nesting beyond yaml-cpp's own depth limit says
// that it nests too deep instead of yaml-cpp's "bad file".
Error yaml_exception_error(const YAML::Exception& e, const std::string& origin, const std::string& what);

}  // namespace launchguard
