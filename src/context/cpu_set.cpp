#include "context/cpu_set.h"

#include <algorithm>
#include <bit>
#include <charconv>

namespace launchguard {
namespace {

constexpr unsigned kMaxCpu = 1U << 16;  // far above any node; bounds a malicious "0-4000000000"

std::string_view strip(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

bool parse_uint(std::string_view s, unsigned& out) {
    if (s.empty()) return false;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

Result<CpuSet> CpuSet::parse_list(std::string_view text) {
    CpuSet set;
    text = strip(text);
    if (text.empty()) return set;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t comma = text.find(',', pos);
        if (comma == std::string_view::npos) comma = text.size();
        std::string_view item = strip(text.substr(pos, comma - pos));
        std::size_t dash = item.find('-');
        unsigned first = 0;
        unsigned last = 0;
        bool good = false;
        if (dash == std::string_view::npos) {
            good = parse_uint(item, first);
            last = first;
        } else {
            good = parse_uint(item.substr(0, dash), first) && parse_uint(item.substr(dash + 1), last);
        }
        if (!good || first > last || last >= kMaxCpu) {
            return make_error("invalid CPU list item '" + std::string(item) + "' in '" + std::string(text) +
                              "' (expected e.g. 0-3,8)");
        }
        set.add_range(first, last);
        pos = comma + 1;
    }
    return set;
}

Result<CpuSet> CpuSet::parse_mask(std::string_view text) {
    text = strip(text);
    // Groups separated by commas, most significant first; each may carry 0x.
    std::vector<std::string_view> groups;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t comma = text.find(',', pos);
        if (comma == std::string_view::npos) comma = text.size();
        std::string_view g = strip(text.substr(pos, comma - pos));
        if (g.size() >= 2 && g[0] == '0' && (g[1] == 'x' || g[1] == 'X')) g.remove_prefix(2);
        groups.push_back(g);
        pos = comma + 1;
    }
    CpuSet set;
    unsigned bit = 0;
    for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
        std::string_view g = *it;
        if (g.empty()) return make_error("invalid CPU mask '" + std::string(text) + "': empty group");
        // Without commas a single group may be wider than 32 bits.
        unsigned width = groups.size() == 1 ? static_cast<unsigned>(g.size()) * 4 : 32;
        unsigned group_bit = 0;
        for (auto c = g.rbegin(); c != g.rend(); ++c) {
            unsigned nibble = 0;
            if (*c >= '0' && *c <= '9')
                nibble = static_cast<unsigned>(*c - '0');
            else if (*c >= 'a' && *c <= 'f')
                nibble = static_cast<unsigned>(*c - 'a' + 10);
            else if (*c >= 'A' && *c <= 'F')
                nibble = static_cast<unsigned>(*c - 'A' + 10);
            else
                return make_error("invalid CPU mask '" + std::string(text) + "': '" + std::string(1, *c) +
                                  "' is not hex");
            for (unsigned b = 0; b < 4; ++b) {
                if (nibble & (1U << b)) {
                    if (bit + group_bit + b >= kMaxCpu)
                        return make_error("CPU mask '" + std::string(text) + "' is too wide");
                    set.add(bit + group_bit + b);
                }
            }
            group_bit += 4;
        }
        bit += width;
    }
    return set;
}

void CpuSet::add(unsigned cpu) {
    std::size_t word = cpu / 64;
    if (words_.size() <= word) words_.resize(word + 1, 0);
    words_[word] |= std::uint64_t{1} << (cpu % 64);
}

void CpuSet::add_range(unsigned first, unsigned last) {
    for (unsigned c = first; c <= last; ++c) add(c);
}

bool CpuSet::contains(unsigned cpu) const {
    std::size_t word = cpu / 64;
    return word < words_.size() && ((words_[word] >> (cpu % 64)) & 1U) != 0;
}

std::size_t CpuSet::count() const {
    std::size_t n = 0;
    for (auto w : words_) n += static_cast<std::size_t>(std::popcount(w));
    return n;
}

CpuSet CpuSet::intersect(const CpuSet& other) const {
    CpuSet out;
    out.words_.resize(std::min(words_.size(), other.words_.size()));
    for (std::size_t i = 0; i < out.words_.size(); ++i) out.words_[i] = words_[i] & other.words_[i];
    out.trim();
    return out;
}

CpuSet CpuSet::unite(const CpuSet& other) const {
    CpuSet out;
    out.words_.resize(std::max(words_.size(), other.words_.size()), 0);
    for (std::size_t i = 0; i < words_.size(); ++i) out.words_[i] |= words_[i];
    for (std::size_t i = 0; i < other.words_.size(); ++i) out.words_[i] |= other.words_[i];
    return out;
}

bool CpuSet::intersects(const CpuSet& other) const {
    std::size_t n = std::min(words_.size(), other.words_.size());
    for (std::size_t i = 0; i < n; ++i) {
        if ((words_[i] & other.words_[i]) != 0) return true;
    }
    return false;
}

std::vector<unsigned> CpuSet::cpus() const {
    std::vector<unsigned> out;
    for (std::size_t w = 0; w < words_.size(); ++w) {
        for (unsigned b = 0; b < 64; ++b) {
            if ((words_[w] >> b) & 1U) out.push_back(static_cast<unsigned>(w * 64 + b));
        }
    }
    return out;
}

std::string CpuSet::to_list() const {
    std::string out;
    auto ids = cpus();
    for (std::size_t i = 0; i < ids.size();) {
        std::size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(ids[i]);
        if (j > i) out += "-" + std::to_string(ids[j]);
        i = j + 1;
    }
    return out;
}

void CpuSet::trim() {
    while (!words_.empty() && words_.back() == 0) words_.pop_back();
}

bool operator==(const CpuSet& a, const CpuSet& b) {
    std::size_t n = std::max(a.words_.size(), b.words_.size());
    for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t x = i < a.words_.size() ? a.words_[i] : 0;
        std::uint64_t y = i < b.words_.size() ? b.words_[i] : 0;
        if (x != y) return false;
    }
    return true;
}

}  // namespace launchguard
