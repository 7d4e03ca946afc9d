// Lexical path normalisation for paths inside a view (a container rootfs, a
// pod): "//", "." and ".." collapse, ".." stops at the root, and a relative
// path is taken from "/". No filesystem access, no symlinks followed.
#pragma once

#include <string>
#include <string_view>

namespace launchguard {

std::string normalize_absolute(std::string_view path);

}  // namespace launchguard
