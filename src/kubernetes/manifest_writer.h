// A YAML manifest written back with patches applied (`launchguard review
// --patched`): the documents nothing patches byte for byte, comments
// included; a patched document from its parsed node tree, in the order its
// keys were written, its unchanged scalars as they were written (plain ones
// plain, quoted and block ones as strings) and the new ones quoted wherever
// YAML 1.1 would read them as something other than a string. Its comments
// are lost (yaml-cpp keeps none), its leading ones kept; an alias within it is
// written out in full (anchors are not kept). What is written is read back
// and must be the patched object, or nothing is written.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include <boost/json/array.hpp>

#include "util/error.h"

namespace launchguard::kubernetes {

// `patches` maps a document of the file (1-based, as ManifestDocument
// numbers them) to its RFC 6902 operations, addressed in the document as
// the file holds it (`/items/2/spec/...` for an item of a List). An error
// names `origin`, the document and the operation or field. With
// `end_with_newline` (another file follows) the text ends in a newline; a
// last document that it would change (a block scalar at the very end of the
// file) is then written from its tree.
Result<std::string> write_patched_yaml(std::string_view text, const std::string& origin,
                                       const std::map<std::size_t, boost::json::array>& patches,
                                       bool end_with_newline = false);

}  // namespace launchguard::kubernetes
