// YAML nodes as the JSON value kubectl sends for them: YAML 1.1 scalar
// resolution and merge keys as sigs.k8s.io/yaml applies them. Shared by the
// manifest reader and the writer of patched manifests, which checks that what
// it writes reads back as the patched object.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

namespace YAML {
class Node;
}  // namespace YAML

namespace launchguard::kubernetes {

// A mapping key written twice in one mapping: the last one is read.
struct DuplicateKey {
    int line = 0;  // 1-based, of the later key
    std::string key;
};

// Collects duplicate keys once each (an alias walks the same mapping again).
class DuplicateKeys {
public:
    void add(int line, const std::string& key);
    [[nodiscard]] const std::vector<DuplicateKey>& found() const { return found_; }

private:
    std::set<std::pair<int, std::string>> seen_;
    std::vector<DuplicateKey> found_;
};

// The value of a plain (unquoted) scalar: null, a boolean (yes/no/on/off
// too), an integer, a float, else the string.
boost::json::value plain_scalar(const std::string& text);

// Throws YAML::ParserException for a non-scalar key or a bad merge. The
// caller bounds the node's expanded size first (check_yaml_expansion).
// `duplicates` may be null.
boost::json::value yaml_to_json(const YAML::Node& node, DuplicateKeys* duplicates);

}  // namespace launchguard::kubernetes
