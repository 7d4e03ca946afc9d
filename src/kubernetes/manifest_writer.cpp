#include "kubernetes/manifest_writer.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include "kubernetes/json_patch.h"
#include "kubernetes/workload_spec.h"
#include "kubernetes/yaml_json.h"
#include "util/yaml_guard.h"

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

// A document as an owned tree that the patch edits in place. yaml-cpp
// shares the node an alias names, so editing its own tree would change every
// place that names it; this copy has one node per place.
struct Tree {
    enum class Kind { null, scalar, sequence, mapping };
    // plain: written unquoted (its YAML 1.1 resolution is its value);
    // quoted: a string written quoted or as a block; fresh: a string the
    // patch brings, written plain only where that reads back as the string.
    enum class Style { plain, quoted, fresh };
    Kind kind = Kind::null;
    Style style = Style::plain;
    std::string text;
    std::string tag;  // an explicit tag other than !!str, written as it was
    bool flow = false;
    std::vector<Tree> items;  // a sequence's items; a mapping's keys and values, alternating
};

Tree tree_from_yaml(const YAML::Node& node) {
    Tree tree;
    tree.flow = node.Style() == YAML::EmitterStyle::Flow;
    switch (node.Type()) {
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined:
            break;
        case YAML::NodeType::Scalar:
            tree.kind = Tree::Kind::scalar;
            tree.text = node.Scalar();
            if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") {
                tree.style = Tree::Style::quoted;
            } else if (node.Tag() != "?") {
                tree.tag = node.Tag();
            }
            break;
        case YAML::NodeType::Sequence:
            tree.kind = Tree::Kind::sequence;
            for (const auto& item : node) tree.items.push_back(tree_from_yaml(item));
            break;
        case YAML::NodeType::Map:
            tree.kind = Tree::Kind::mapping;
            for (const auto& entry : node) {
                tree.items.push_back(tree_from_yaml(entry.first));
                tree.items.push_back(tree_from_yaml(entry.second));
            }
            break;
    }
    return tree;
}

Tree scalar_tree(std::string text, Tree::Style style) {
    Tree tree;
    tree.kind = Tree::Kind::scalar;
    tree.text = std::move(text);
    tree.style = style;
    return tree;
}

// A double written so that it reads back as a double: "1.0", not "1".
std::string double_text(double value) {
    char buffer[64];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    std::string text(buffer, ec == std::errc() ? end : buffer);
    if (text.find_first_of(".eE") == std::string::npos) text += ".0";
    return text;
}

Tree tree_from_json(const json::value& value) {
    Tree tree;
    switch (value.kind()) {
        case json::kind::null:
            return tree;
        case json::kind::bool_:
            return scalar_tree(value.get_bool() ? "true" : "false", Tree::Style::plain);
        case json::kind::int64:
            return scalar_tree(std::to_string(value.get_int64()), Tree::Style::plain);
        case json::kind::uint64:
            return scalar_tree(std::to_string(value.get_uint64()), Tree::Style::plain);
        case json::kind::double_:
            return scalar_tree(double_text(value.get_double()), Tree::Style::plain);
        case json::kind::string:
            return scalar_tree(std::string(value.get_string()), Tree::Style::fresh);
        case json::kind::array:
            tree.kind = Tree::Kind::sequence;
            for (const auto& item : value.get_array()) tree.items.push_back(tree_from_json(item));
            return tree;
        case json::kind::object:
            tree.kind = Tree::Kind::mapping;
            for (const auto& [key, item] : value.get_object()) {
                tree.items.push_back(scalar_tree(std::string(key), Tree::Style::fresh));
                tree.items.push_back(tree_from_json(item));
            }
            return tree;
    }
    return tree;
}

bool is_merge_key(const Tree& key) {
    return key.kind == Tree::Kind::scalar && key.style == Tree::Style::plain && key.tag.empty() && key.text == "<<";
}

// The value a mapping gives `key` as yaml_to_json reads it: the last key
// written in it, else the first merged mapping (`<<`) that has it.
const Tree* lookup(const Tree& mapping, const std::string& key) {
    for (std::size_t i = mapping.items.size(); i >= 2; i -= 2) {
        if (!is_merge_key(mapping.items[i - 2]) && mapping.items[i - 2].text == key) return &mapping.items[i - 1];
    }
    for (std::size_t i = 0; i + 1 < mapping.items.size(); i += 2) {
        if (!is_merge_key(mapping.items[i])) continue;
        const Tree& merged = mapping.items[i + 1];
        if (merged.kind == Tree::Kind::mapping) {
            if (const Tree* found = lookup(merged, key)) return found;
        } else if (merged.kind == Tree::Kind::sequence) {
            for (const Tree& source : merged.items) {
                if (source.kind != Tree::Kind::mapping) continue;
                if (const Tree* found = lookup(source, key)) return found;
            }
        }
    }
    return nullptr;
}

Tree* written_member(Tree& mapping, const std::string& key) {
    for (std::size_t i = mapping.items.size(); i >= 2; i -= 2) {
        if (!is_merge_key(mapping.items[i - 2]) && mapping.items[i - 2].text == key) return &mapping.items[i - 1];
    }
    return nullptr;
}

// The member to edit: one the mapping writes itself. A member only a merge
// brings is copied into the mapping first (a written key wins over a merged
// one, so the object is the same), so that the edit does not reach the
// mapping the merge names.
Tree* editable_member(Tree& mapping, const std::string& key) {
    if (Tree* written = written_member(mapping, key)) return written;
    const Tree* merged = lookup(mapping, key);
    if (merged == nullptr) return nullptr;
    Tree copy = *merged;
    mapping.items.push_back(scalar_tree(key, Tree::Style::fresh));
    mapping.items.push_back(std::move(copy));
    return &mapping.items.back();
}

// RFC 6902 add/remove/replace on the tree, as apply_json_patch does them on
// the JSON value.
Status apply_to_tree(Tree& root, const json::object& operation) {
    const json::value* op_value = operation.if_contains("op");
    const json::value* path_value = operation.if_contains("path");
    if (op_value == nullptr || !op_value->is_string() || path_value == nullptr || !path_value->is_string()) {
        return make_error("expected string members op and path");
    }
    const std::string op(op_value->get_string());
    const std::string path(path_value->get_string());
    const json::value* value = operation.if_contains("value");
    auto fail = [&](const std::string& why) { return Status(make_error(op + " " + path + ": " + why)); };
    if (op != "add" && op != "replace" && op != "remove") return fail("unsupported operation");
    if (op != "remove" && value == nullptr) return fail("no value");
    auto tokens = json_pointer_tokens(path);
    if (!tokens) return fail("not a JSON Pointer");
    if (tokens->empty()) {
        if (op == "remove") return fail("cannot remove the whole document");
        root = tree_from_json(*value);
        return Done{};
    }
    Tree* parent = &root;
    for (std::size_t i = 0; i + 1 < tokens->size() && parent != nullptr; ++i) {
        const std::string& token = (*tokens)[i];
        if (parent->kind == Tree::Kind::mapping) {
            parent = editable_member(*parent, token);
        } else if (parent->kind == Tree::Kind::sequence) {
            auto index = json_pointer_index(token, parent->items.size(), false);
            parent = index ? &parent->items[*index] : nullptr;
        } else {
            parent = nullptr;
        }
    }
    if (parent == nullptr) return fail("the parent does not exist");
    const std::string& last = tokens->back();
    if (parent->kind == Tree::Kind::mapping) {
        if (op == "remove") {
            bool removed = false;
            for (std::size_t i = parent->items.size(); i >= 2; i -= 2) {
                if (is_merge_key(parent->items[i - 2]) || parent->items[i - 2].text != last) continue;
                parent->items.erase(parent->items.begin() + static_cast<std::ptrdiff_t>(i - 2),
                                    parent->items.begin() + static_cast<std::ptrdiff_t>(i));
                removed = true;
            }
            if (lookup(*parent, last) != nullptr) return fail("a merge key (<<) brings the member in; edit it there");
            return removed ? Status(Done{}) : fail("no member to remove");
        }
        if (op == "replace" && lookup(*parent, last) == nullptr) return fail("no member to replace");
        if (Tree* written = written_member(*parent, last)) {
            *written = tree_from_json(*value);
        } else {
            parent->items.push_back(scalar_tree(last, Tree::Style::fresh));
            parent->items.push_back(tree_from_json(*value));
        }
        return Done{};
    }
    if (parent->kind == Tree::Kind::sequence) {
        auto index = json_pointer_index(last, parent->items.size(), op == "add");
        if (!index) return fail("no such array element");
        auto at = parent->items.begin() + static_cast<std::ptrdiff_t>(*index);
        if (op == "add") {
            parent->items.insert(at, tree_from_json(*value));
        } else if (op == "replace") {
            *at = tree_from_json(*value);
        } else {
            parent->items.erase(at);
        }
        return Done{};
    }
    return fail("the parent is neither an object nor an array");
}

// A string that YAML 1.1 (sigs.k8s.io/yaml, PyYAML) reads back as the same
// string when written plain: it starts with a letter or a slash, is not a
// boolean or null word (yes, off, null...), and has none of the characters
// that would end, quote, tag or comment it.
bool plain_keeps_string(const std::string& text) {
    if (text.empty() || text.size() > 200) return false;
    char first = text.front();
    bool letter = (first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z');
    if (!letter && first != '/') return false;
    if (!plain_scalar(text).is_string()) return false;
    for (char c : text) {
        auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f || byte >= 0x80) return false;
        if (std::string_view(":#,[]{}&*!|>'\"%@`\\ ").find(c) != std::string_view::npos) return false;
    }
    return true;
}

// yaml-cpp writes a literal block with the "clip" indicator and indents
// every line: right for a text that ends in exactly one newline (written
// without it: clip adds it back) and whose
// first line does not start with a space (which would be taken for
// indentation), without carriage returns or other control characters.
bool literal_keeps_string(const std::string& text) {
    if (text.size() < 2 || text.back() != '\n' || text[text.size() - 2] == '\n') return false;
    if (text.front() == ' ' || text.front() == '\t' || text.front() == '\n') return false;
    for (char c : text) {
        auto byte = static_cast<unsigned char>(c);
        if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) return false;
    }
    return true;
}

bool single_quote_keeps_string(const std::string& text) {
    for (char c : text) {
        auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f || byte >= 0x80) return false;
    }
    return true;
}

struct EmitOptions {
    bool literal_blocks = true;
};

void emit(YAML::Emitter& out, const Tree& node, bool in_flow, bool is_key, const EmitOptions& options) {
    switch (node.kind) {
        case Tree::Kind::null:
            out << YAML::Null;
            return;
        case Tree::Kind::scalar:
            if (!node.tag.empty()) out << YAML::VerbatimTag(node.tag);
            if (node.style == Tree::Style::plain) {
                out << node.text;
            } else if (node.text.find('\n') != std::string::npos) {
                // Without its final newline, which the "clip" indicator adds back.
                if (options.literal_blocks && !in_flow && !is_key && literal_keeps_string(node.text)) {
                    out << YAML::Literal << node.text.substr(0, node.text.size() - 1);
                } else {
                    out << YAML::DoubleQuoted << node.text;
                }
            } else if (node.style == Tree::Style::fresh && plain_keeps_string(node.text)) {
                out << node.text;
            } else {
                out << (single_quote_keeps_string(node.text) ? YAML::SingleQuoted : YAML::DoubleQuoted) << node.text;
            }
            return;
        case Tree::Kind::sequence:
            if (node.flow || in_flow) out << YAML::Flow;
            out << YAML::BeginSeq;
            for (const Tree& item : node.items) emit(out, item, node.flow || in_flow, false, options);
            out << YAML::EndSeq;
            return;
        case Tree::Kind::mapping:
            if (node.flow || in_flow) out << YAML::Flow;
            out << YAML::BeginMap;
            for (std::size_t i = 0; i + 1 < node.items.size(); i += 2) {
                out << YAML::Key;
                emit(out, node.items[i], node.flow || in_flow, true, options);
                out << YAML::Value;
                emit(out, node.items[i + 1], node.flow || in_flow, false, options);
            }
            out << YAML::EndMap;
            return;
    }
}

// The first place where two values differ, as a JSON pointer ("" for the
// whole value).
std::string first_difference(const json::value& a, const json::value& b) {
    if (a.kind() != b.kind()) return "";
    if (a.is_object()) {
        const json::object& left = a.get_object();
        const json::object& right = b.get_object();
        for (const auto& [key, value] : left) {
            const json::value* other = right.if_contains(key);
            if (other == nullptr) return "/" + escape_pointer_token(key);
            if (*other != value) return "/" + escape_pointer_token(key) + first_difference(value, *other);
        }
        for (const auto& [key, value] : right) {
            if (!left.contains(key)) return "/" + escape_pointer_token(key);
        }
        return "";
    }
    if (a.is_array()) {
        const json::array& left = a.get_array();
        const json::array& right = b.get_array();
        for (std::size_t i = 0; i < left.size() && i < right.size(); ++i) {
            if (left[i] != right[i]) return "/" + std::to_string(i) + first_difference(left[i], right[i]);
        }
        return "/" + std::to_string(std::min(left.size(), right.size()));
    }
    return "";
}

// Parses a text this file wrote or cut from the input, with the guards the
// reader applies to input.
Result<std::vector<YAML::Node>> load_documents(std::string_view text, const std::string& origin) {
    if (auto guarded = check_yaml_terminates(text, origin); !guarded) return guarded.error();
    try {
        std::vector<YAML::Node> documents = YAML::LoadAll(std::string(text));
        if (auto bounded = check_yaml_expansion(documents, origin); !bounded) return bounded.error();
        return documents;
    } catch (const YAML::Exception& e) {
        return yaml_exception_error(e, origin, "invalid YAML");
    }
}

// The document's tree written as YAML, if it reads back as `expected`;
// else the pointer where it does not.
Result<std::string> write_document(const Tree& tree, const json::value& expected, const std::string& origin,
                                   const EmitOptions& options) {
    YAML::Emitter out;
    out.SetIndent(2);
    emit(out, tree, false, false, options);
    if (!out.good()) return make_error("yaml-cpp cannot write it: " + out.GetLastError());
    std::string text = out.c_str();
    if (text.empty() || text.back() != '\n') text += '\n';
    auto again = load_documents(text, origin);
    if (!again) return again.error();
    try {
        json::value read = again->size() == 1 ? yaml_to_json(again->front(), nullptr) : json::value();
        if (again->size() == 1 && read == expected) return text;
        Error e = make_error("what launchguard would write does not read back as the patched object");
        e.field = first_difference(expected, read);
        return e;
    } catch (const YAML::Exception& e) {
        return yaml_exception_error(e, origin, "invalid YAML written");
    }
}

bool is_document_start(std::string_view line) {
    return line.starts_with("---") &&
           (line.size() == 3 || std::string_view(" \t\r\n").find(line[3]) != std::string_view::npos);
}

struct Segment {
    std::string_view text;               // from its `---` line (if any) to the next one
    std::vector<std::size_t> documents;  // 1-based, of the file
};

// The file cut at its `---` lines, each piece with the documents it holds.
// Nothing when the pieces do not read as the whole file does (a directive,
// a marker yaml-cpp reads otherwise): every document is then written from
// its tree.
std::optional<std::vector<Segment>> segments_of(std::string_view text, const std::string& origin,
                                                const std::vector<json::value>& whole) {
    std::vector<Segment> segments;
    std::size_t start = 0;
    for (std::size_t at = 0; at < text.size();) {
        std::size_t newline = text.find('\n', at);
        std::size_t end = newline == std::string_view::npos ? text.size() : newline + 1;
        if (at > start && is_document_start(text.substr(at, end - at))) {
            segments.push_back({text.substr(start, at - start), {}});
            start = at;
        }
        at = end;
    }
    segments.push_back({text.substr(start), {}});
    std::size_t document = 0;
    for (Segment& segment : segments) {
        auto parsed = load_documents(segment.text, origin);
        if (!parsed) return std::nullopt;
        for (const auto& node : *parsed) {
            try {
                if (document >= whole.size() || yaml_to_json(node, nullptr) != whole[document]) return std::nullopt;
            } catch (const YAML::Exception&) {
                return std::nullopt;
            }
            segment.documents.push_back(++document);
        }
    }
    if (document != whole.size()) return std::nullopt;
    return segments;
}

// What a patched document keeps of its piece of the file: the `---` line and
// the comment and blank lines before its content.
std::string leading_lines(std::string_view segment) {
    std::string kept;
    std::size_t at = 0;
    while (at < segment.size()) {
        std::size_t newline = segment.find('\n', at);
        std::size_t end = newline == std::string_view::npos ? segment.size() : newline + 1;
        std::string_view line = segment.substr(at, end - at);
        std::size_t first = line.find_first_not_of(" \t\r\n");
        bool keep = first == std::string_view::npos || line[first] == '#' ||
                    (at == 0 && is_document_start(line) &&
                     (line.find_first_not_of(" \t\r\n", 3) == std::string_view::npos ||
                      line[line.find_first_not_of(" \t\r\n", 3)] == '#'));
        if (!keep) break;
        kept += line;
        if (kept.back() != '\n') kept += '\n';
        at = end;
    }
    return kept;
}

}  // namespace

Result<std::string> write_patched_yaml(std::string_view text, const std::string& origin,
                                       const std::map<std::size_t, json::array>& patches, bool end_with_newline) {
    auto loaded = load_documents(text, origin);
    if (!loaded) return loaded.error();
    const std::vector<YAML::Node>& nodes = *loaded;
    std::vector<json::value> whole;
    std::map<std::size_t, std::string> written;  // document -> its YAML
    try {
        for (const auto& node : nodes) whole.push_back(yaml_to_json(node, nullptr));
        for (const auto& entry : patches) {
            // Named, not bound: clang 14 cannot capture a binding in `fail`.
            const std::size_t document = entry.first;
            const json::array& operations = entry.second;
            if (operations.empty()) continue;
            auto fail = [&](Error e) {
                e.file = origin;
                e.message = "document " + std::to_string(document) + ": " + e.message + "; nothing written";
                return e;
            };
            if (document == 0 || document > nodes.size()) return fail(make_error("no such document"));
            auto expected = apply_json_patch(whole[document - 1], operations);
            if (!expected) return fail(expected.error());
            Tree tree = tree_from_yaml(nodes[document - 1]);
            for (std::size_t i = 0; i < operations.size(); ++i) {
                Status applied = operations[i].is_object() ? apply_to_tree(tree, operations[i].get_object())
                                                           : Status(make_error("expected an operation object"));
                if (!applied) {
                    Error e = applied.error();
                    e.field = "patch[" + std::to_string(i) + "]";
                    return fail(e);
                }
            }
            auto yaml = write_document(tree, *expected, origin, EmitOptions{});
            // A string yaml-cpp writes as a literal block otherwise than it
            // reads: double-quoted instead.
            if (!yaml) yaml = write_document(tree, *expected, origin, EmitOptions{false});
            if (!yaml) return fail(yaml.error());
            written[document] = std::move(yaml).value();
        }
    } catch (const YAML::Exception& e) {
        return yaml_exception_error(e, origin, "invalid YAML");
    }
    const bool add_newline = end_with_newline && !text.empty() && text.back() != '\n';
    if (written.empty() && !add_newline) return std::string(text);

    // A document nothing patches, written from its tree where the file cannot
    // be cut into documents.
    auto yaml_of = [&](std::size_t document) -> Result<std::string> {
        if (auto found = written.find(document); found != written.end()) return found->second;
        Tree tree = tree_from_yaml(nodes[document - 1]);
        auto yaml = write_document(tree, whole[document - 1], origin, EmitOptions{});
        if (!yaml) yaml = write_document(tree, whole[document - 1], origin, EmitOptions{false});
        if (!yaml) {
            Error e = yaml.error();
            e.file = origin;
            e.message = "document " + std::to_string(document) + ": " + e.message + "; nothing written";
            return e;
        }
        return yaml;
    };
    std::string out;
    auto segments = segments_of(text, origin, whole);
    if (!segments) {
        for (std::size_t document = 1; document <= nodes.size(); ++document) {
            if (whole[document - 1].is_null()) continue;  // an empty document
            auto yaml = yaml_of(document);
            if (!yaml) return yaml.error();
            if (!out.empty()) out += "---\n";
            out += *yaml;
        }
        return out;
    }
    for (const Segment& segment : *segments) {
        bool patched = false;
        for (std::size_t document : segment.documents) patched = patched || written.count(document) != 0;
        const bool last = &segment == &segments->back();
        if (!patched && last && add_newline) {
            // A newline at the very end changes a block scalar that ends there.
            auto with_newline = load_documents(std::string(segment.text) + "\n", origin);
            bool same = with_newline && with_newline->size() == segment.documents.size();
            for (std::size_t i = 0; same && i < segment.documents.size(); ++i) {
                try {
                    same = yaml_to_json((*with_newline)[i], nullptr) == whole[segment.documents[i] - 1];
                } catch (const YAML::Exception&) {
                    same = false;
                }
            }
            if (same) {
                out += segment.text;
                out += '\n';
                continue;
            }
            patched = true;  // written from its tree, which ends in a newline
        }
        if (!patched) {
            out += segment.text;
            continue;
        }
        std::string leading = leading_lines(segment.text);
        if (!is_document_start(leading) && is_document_start(segment.text)) leading = "---\n" + leading;
        out += leading;
        for (std::size_t i = 0; i < segment.documents.size(); ++i) {
            auto yaml = yaml_of(segment.documents[i]);
            if (!yaml) return yaml.error();
            if (i > 0) out += "---\n";
            out += *yaml;
        }
    }
    return out;
}

}  // namespace launchguard::kubernetes
