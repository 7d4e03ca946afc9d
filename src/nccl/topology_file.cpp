// A re-implementation of the outcomes of NCCL 2.30's topology XML reader
// (src/graph/xml.cc: xmlGetChar, xmlGetValue, xmlGetToken, xmlSkipComment,
// xmlGetNode, xmlLoadSub, ncclTopoXmlLoad*, ncclTopoGetXmlFromFile).
//
// NCCL's reader is not an XML parser: it reads one character at a time and
// accepts only the exact shape its own writer produces. To predict which files
// NCCL accepts we mirror its decisions character by character rather than use
// a real XML library, which would accept prologs, tabs and multi-line tags
// that make NCCL fail communicator init.
#include "nccl/topology_file.h"

#include "nccl/topology_elements.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace launchguard::nccl {
namespace {

// Limits from src/graph/xml.h and topo.h.
constexpr std::size_t kMaxStrLen = 255;     // MAX_STR_LEN
constexpr std::size_t kMaxAttrCount = 16;   // MAX_ATTR_COUNT
constexpr std::size_t kMaxSubs = 640;       // MAX_SUBS
constexpr std::size_t kMaxTopoNodes = 256;  // NCCL_TOPO_XML_MAX_NODES
constexpr int kTopoXmlVersion = 1;          // NCCL_TOPO_XML_VERSION
constexpr int kMaxDepth = 2048;             // ours, not NCCL's: see load_children

enum class NodeType { none, open, close, single, comment };

struct XmlAttr {
    std::string key;
    std::string value;
};

struct XmlNode {
    NodeType type = NodeType::none;
    std::string name;
    std::vector<XmlAttr> attrs;
    std::size_t handled_children = 0;  // subs NCCL keeps (handled elements only)
    int line = 0;                      // line of the opening '<'

    [[nodiscard]] const std::string* attr(std::string_view key) const {
        for (const auto& a : attrs) {
            if (a.key == key) return &a.value;
        }
        return nullptr;
    }
};

// Raised inside the parser to unwind to parse_topology(); never escapes it.
struct ParseFailure {
    std::string message;
    int line = 0;
};

std::string as_c_string(const std::string& text) { return text.substr(0, text.find('\0')); }

// NCCL prints the offending character raw ('%c'); a raw newline in a report
// is unreadable, so control characters are shown as C escapes (\n, \t).
std::string printable(char c) {
    switch (c) {
        case '\n':
            return "\\n";
        case '\r':
            return "\\r";
        case '\t':
            return "\\t";
        case '\0':
            return "\\0";
        default:
            return std::string(1, c);
    }
}

class CharStream {
public:
    explicit CharStream(std::string_view text) : text_(text) {}

    // xmlGetChar: end of input inside a construct is an error.
    char next() {
        auto c = try_next();
        if (!c) throw ParseFailure{"XML Parse : Unexpected EOF", next_line_};
        return *c;
    }

    std::optional<char> try_next() {
        if (pos_ >= text_.size()) return std::nullopt;
        char c = text_[pos_++];
        last_line_ = next_line_;
        if (c == '\n') ++next_line_;
        return c;
    }

    // Line of the character most recently read; a '\n' belongs to the line
    // it terminates, which is where a reader looks for the defect.
    [[nodiscard]] int line_of_last() const { return last_line_; }
    [[nodiscard]] int next_line() const { return next_line_; }

private:
    std::string_view text_;
    std::size_t pos_ = 0;
    int next_line_ = 1;
    int last_line_ = 1;
};

class TopologyReader {
public:
    explicit TopologyReader(std::string_view text, std::vector<TopoElement>* elements = nullptr)
        : in_(text), elements_(elements) {}

    TopologyFile run() {
        try {
            load_children(nullptr, Level::document, 0);
        } catch (const ParseFailure& failure) {
            result_.outcome = TopoOutcome::rejected;
            result_.reason = failure.message;
            result_.line = failure.line;
        }
        TopologyFile result = std::move(result_);
        if (result.outcome != TopoOutcome::rejected) classify(result);
        for (const auto& pci : result.pcis) {
            bool has_upper_hex =
                std::any_of(pci.busid.begin(), pci.busid.end(), [](char c) { return c >= 'A' && c <= 'F'; });
            if (has_upper_hex) result.upper_case_busids.push_back(pci.busid);
        }
        return result;
    }

private:
    // Which handler table applies (ncclTopoXmlLoadSystem/Cpu/Pci/Gpu/Nic and
    // the generic no-handler recursion used for skipped or leaf elements).
    enum class Level { document, system, cpu, pci, gpu, nic, leaf, skipped };

    static std::vector<std::pair<std::string_view, Level>> handlers_for(Level level) {
        switch (level) {
            case Level::document:
                return {{"system", Level::system}};
            case Level::system:
                return {{"cpu", Level::cpu}};
            case Level::cpu:
                return {{"pci", Level::pci}, {"nic", Level::nic}};
            case Level::pci:
                return {{"pci", Level::pci}, {"gpu", Level::gpu}, {"nic", Level::nic}, {"pcilink", Level::leaf}};
            case Level::gpu:
                return {{"nvlink", Level::leaf}, {"c2c", Level::leaf}};
            case Level::nic:
                return {{"net", Level::leaf}};
            case Level::leaf:
            case Level::skipped:
                return {};
        }
        return {};
    }

    // xmlGetToken: a name ends at ' ', '>', '/', '\n' or '\r' (the terminator
    // is returned in `last`); '=' switches to reading a value, which is an
    // error where no value is expected (element names).
    std::string read_token(bool value_allowed, std::string* value, char& last) {
        std::string token;
        for (;;) {
            char c = in_.next();
            if (c == '=') {
                if (!value_allowed) {
                    throw ParseFailure{"XML Parse : Unexpected value with name " + token, in_.line_of_last()};
                }
                *value = read_value(last);
                return token;
            }
            if (token.size() == kMaxStrLen - 1) {
                throw ParseFailure{"Error : name " + token + " too long (max " + std::to_string(kMaxStrLen) + ")",
                                   in_.line_of_last()};
            }
            if (c == ' ' || c == '>' || c == '/' || c == '\n' || c == '\r') {
                last = c;
                return token;
            }
            token.push_back(c);
        }
    }

    // xmlGetValue: values must be quoted ('"' or '\''; unquoted integers are
    // compiled out, INT_OK is never defined); `last` is the character after
    // the closing quote.
    std::string read_value(char& last) {
        char quote = in_.next();
        if (quote != '"' && quote != '\'') {
            throw ParseFailure{"XML Parse : Expected (double) quote.", in_.line_of_last()};
        }
        std::string value;
        for (;;) {
            char c = in_.next();
            // NCCL stores the closing quote too before checking the length,
            // so the limit counts it.
            if (value.size() == kMaxStrLen - 1) {
                throw ParseFailure{"Error : value " + value + " too long (max " + std::to_string(kMaxStrLen) + ")",
                                   in_.line_of_last()};
            }
            if (c == quote) break;
            value.push_back(c);
        }
        last = in_.next();
        return value;
    }

    // xmlSkipComment: scan until the last three characters read are "-->",
    // counting what the name token already swallowed.
    void skip_comment(const std::string& already_read, char next, int start_line) {
        std::string window = "...";
        auto shift_in = [&window](char c) { window = window.substr(1) + c; };
        for (char c : already_read) shift_in(c);
        shift_in(next);
        while (window != "-->") {
            auto c = in_.try_next();
            if (!c) throw ParseFailure{"XML Parse error : unterminated comment", start_line};
            shift_in(*c);
        }
    }

    // xmlGetNode: skip ' ', '\n', '\r' (not TAB), then one tag. NCCL
    // recurses once per comment; a loop gives the same result without a
    // stack frame per comment (30,000 comments overflowed the stack).
    XmlNode read_node() {
        for (;;) {
            XmlNode node = read_tag();
            if (node.type != NodeType::comment) return node;
        }
    }

    XmlNode read_tag() {
        XmlNode node;
        char c = ' ';
        while (c == ' ' || c == '\n' || c == '\r') {
            auto next = in_.try_next();
            if (!next) return node;  // NodeType::none: end of input
            c = *next;
        }
        if (c != '<') {
            throw ParseFailure{"XML Parse error : expecting '<', got '" + printable(c) + "'", in_.line_of_last()};
        }
        node.line = in_.line_of_last();
        node.name = read_token(false, nullptr, c);

        if (node.name.rfind("!--", 0) == 0) {
            skip_comment(node.name.substr(3), c, node.line);
            node.type = NodeType::comment;
            return node;
        }

        if (node.name.empty() && c == '/') {
            node.type = NodeType::close;
            node.name = read_token(false, nullptr, c);
            if (c != '>') {
                throw ParseFailure{
                    "XML Parse error : unexpected trailing " + printable(c) + " in closing tag " + node.name,
                    in_.line_of_last()};
            }
            return node;
        }

        node.type = NodeType::open;
        while (c == ' ') {
            XmlAttr attr;
            attr.key = read_token(true, &attr.value, c);
            // NCCL keeps names and values in C strings: whatever follows a
            // NUL byte is read (and counts towards the length limit) but
            // every later use stops at the NUL.
            attr.key = as_c_string(attr.key);
            attr.value = as_c_string(attr.value);
            // Past MAX_ATTR_COUNT NCCL keeps parsing into one spare slot that
            // is overwritten each time: the extra attributes are dropped.
            if (node.attrs.size() < kMaxAttrCount) node.attrs.push_back(std::move(attr));
        }
        if (c == '/') {
            node.type = NodeType::single;
            read_token(false, nullptr, c);
        }
        if (c != '>') {
            throw ParseFailure{"XML Parse : expected >, got '" + printable(c) + "'", in_.line_of_last()};
        }
        return node;
    }

    // xmlLoadSub: read siblings until the parent's closing tag (or the end of
    // the document when there is no parent).
    void load_children(XmlNode* parent, Level level, int depth) {
        if (parent && parent->type == NodeType::single) return;
        // NCCL recurses without a limit; we stop before our own stack does.
        if (depth > kMaxDepth) {
            throw ParseFailure{"elements nested deeper than " + std::to_string(kMaxDepth) +
                                   " levels (launchguard limit; NCCL would recurse until its stack runs out)",
                               parent ? parent->line : 0};
        }
        const auto handlers = handlers_for(level);
        for (;;) {
            // NCCL checks the node budget before reading anything, closing
            // tags included.
            if (stored_nodes_ == kMaxTopoNodes) {
                throw ParseFailure{"Error : XML parser is limited to " + std::to_string(kMaxTopoNodes) + " nodes",
                                   in_.next_line()};
            }
            XmlNode node = read_node();
            // Inside an ignored element NCCL reads each child into the very
            // slot that holds the ignored element itself (xmlLoadSub is called
            // with head == xml->nodes + maxIndex, which is not advanced for
            // unhandled nodes). The head is therefore overwritten by every
            // node read: any closing tag "matches" it, and at end of input
            // its name is already blank.
            const bool head_aliased = level == Level::skipped;
            if (node.type == NodeType::none) {
                if (parent) {
                    throw ParseFailure{"XML Parse : unterminated " + (head_aliased ? std::string() : parent->name),
                                       parent->line};
                }
                return;
            }
            if (!parent && first_root_name_.empty()) first_root_name_ = node.name;
            if (parent && node.type == NodeType::close) {
                if (!head_aliased && node.name != parent->name) {
                    throw ParseFailure{"XML Mismatch : " + parent->name + " / " + node.name, node.line};
                }
                return;
            }
            auto handler =
                std::find_if(handlers.begin(), handlers.end(), [&node](const auto& h) { return h.first == node.name; });
            if (handler == handlers.end()) {
                // "Ignoring element": consumed with no handlers, never stored.
                load_children(&node, Level::skipped, depth + 1);
                continue;
            }
            if (parent) {
                if (parent->handled_children == kMaxSubs) {
                    throw ParseFailure{"Error : XML parser is limited to " + std::to_string(kMaxSubs) + " subnodes",
                                       node.line};
                }
                ++parent->handled_children;
            }
            ++stored_nodes_;
            handle(node, handler->second, depth + 1);
        }
    }

    void handle(XmlNode& node, Level level, int depth) {
        if (!elements_) {
            handle_element(node, level, depth);
            return;
        }
        const int parent_element = open_elements_.empty() ? -1 : open_elements_.back();
        TopoElement element{node.name, {}, parent_element, node.line};
        for (const auto& a : node.attrs) element.attrs.emplace_back(a.key, a.value);
        open_elements_.push_back(static_cast<int>(elements_->size()));
        elements_->push_back(std::move(element));
        handle_element(node, level, depth);
        open_elements_.pop_back();
    }

    void handle_element(XmlNode& node, Level level, int depth) {
        if (level == Level::system) {
            load_system(node, depth);
            return;
        }
        if (level == Level::cpu) {
            TopoCpu cpu;
            if (const auto* v = node.attr("numaid")) cpu.numaid = *v;
            if (const auto* v = node.attr("affinity")) cpu.affinity = *v;
            cpu.line = node.line;
            result_.cpus.push_back(std::move(cpu));
        } else if (level == Level::pci) {
            TopoPci pci;
            if (const auto* v = node.attr("busid")) pci.busid = *v;
            if (const auto* v = node.attr("class")) pci.cls = *v;
            // <pci> only ever sits below a <cpu> (the handler tables), and
            // <cpu> does not nest: the last one opened encloses it.
            if (!result_.cpus.empty()) {
                pci.numaid = result_.cpus.back().numaid;
                pci.affinity = result_.cpus.back().affinity;
                pci.cpu_line = result_.cpus.back().line;
            }
            pci.bridges = open_pcis_;
            pci.line = node.line;
            open_pcis_.push_back(pci.busid);
            result_.pcis.push_back(std::move(pci));
            load_children(&node, level, depth);
            open_pcis_.pop_back();
            return;
        }
        load_children(&node, level, depth);
    }

    // ncclTopoXmlLoadSystem: version is required (xmlGetAttrInt ->
    // xmlGetAttrStr) and read with strtol(str, NULL, 0), so "1abc" counts as 1.
    void load_system(XmlNode& node, int depth) {
        const std::string* version_text = node.attr("version");
        if (!version_text) {
            throw ParseFailure{"Attribute version of node " + node.name + " not found", node.line};
        }
        // xmlGetAttrInt stores strtol's long in an int, so NCCL compares the
        // low 32 bits: "4294967297" is version 1 (conversion is modular in C++20).
        const int version = static_cast<int>(std::strtol(version_text->c_str(), nullptr, 0));
        if (version != kTopoXmlVersion) {
            throw ParseFailure{"XML Topology has wrong version " + std::to_string(version) + ", " +
                                   std::to_string(kTopoXmlVersion) + " needed",
                               node.line};
        }
        ++systems_;
        load_children(&node, Level::system, depth);
        system_children_ += node.handled_children;
        if (first_system_line_ == 0) first_system_line_ = node.line;
    }

    void classify(TopologyFile& result) const {
        if (systems_ == 0) {
            result.outcome = TopoOutcome::silently_ignored;
            result.reason = ignored_elements_reason();
            return;
        }
        if (system_children_ == 0) {
            result.outcome = TopoOutcome::silently_ignored;
            result.reason = "<system> has no <cpu> children: the file contributes nothing and NCCL auto-detects";
            result.line = first_system_line_;
            return;
        }
        result.outcome = TopoOutcome::accepted;
    }

    [[nodiscard]] std::string ignored_elements_reason() const {
        if (first_root_name_.empty()) {
            return "the file holds no elements: NCCL loads an empty topology and auto-detects";
        }
        return "root element is not <system>: NCCL logs only INFO \"Ignoring element " + first_root_name_ +
               "\" and auto-detects";
    }

    CharStream in_;
    TopologyFile result_;
    std::vector<std::string> open_pcis_;            // <pci> elements enclosing the reader's position
    std::vector<TopoElement>* elements_ = nullptr;  // where to keep the elements, when asked
    std::vector<int> open_elements_;                // indices of the kept elements enclosing the position
    std::size_t stored_nodes_ = 0;
    std::size_t systems_ = 0;
    std::size_t system_children_ = 0;
    int first_system_line_ = 0;
    std::string first_root_name_;
};

}  // namespace

std::string_view to_string(TopoOutcome outcome) {
    switch (outcome) {
        case TopoOutcome::accepted:
            return "accepted";
        case TopoOutcome::silently_ignored:
            return "silently_ignored";
        case TopoOutcome::rejected:
            return "rejected";
    }
    return "unknown";
}

TopologyFile parse_topology(std::string_view text) {
    try {
        return TopologyReader(text).run();
    } catch (...) {
        // Only allocation failure can get here; report it rather than throw.
        TopologyFile failed;
        failed.outcome = TopoOutcome::rejected;
        failed.reason = "launchguard could not parse the file (out of memory)";
        return failed;
    }
}

TopologyTree parse_topology_tree(std::string_view text) {
    TopologyTree tree;
    try {
        tree.file = TopologyReader(text, &tree.elements).run();
    } catch (...) {
        tree.elements.clear();
        tree.file.outcome = TopoOutcome::rejected;
        tree.file.reason = "launchguard could not parse the file (out of memory)";
    }
    return tree;
}

bool is_in_process_path(std::string_view path) {
    auto all_digits = [](std::string_view s) {
        return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    };
    // /dev/fd/N is the same file-descriptor view as /proc/self/fd/N.
    constexpr std::string_view dev_fd = "/dev/fd/";
    if (path.substr(0, dev_fd.size()) == dev_fd) return all_digits(path.substr(dev_fd.size()));

    constexpr std::string_view proc = "/proc/";
    if (path.substr(0, proc.size()) != proc) return false;
    std::string_view rest = path.substr(proc.size());
    auto slash = rest.find('/');
    if (slash == std::string_view::npos) return false;
    std::string_view process = rest.substr(0, slash);
    if (process != "self" && process != "thread-self" && !all_digits(process)) return false;
    rest = rest.substr(slash + 1);
    constexpr std::string_view fd = "fd/";
    if (rest.substr(0, fd.size()) != fd) return false;
    return all_digits(rest.substr(fd.size()));
}

}  // namespace launchguard::nccl
