// A set of logical CPU ids, as Linux cpulists ("0-3,8,10-11") and hex masks
// ("0x0000000f,0xffffffff", as hwloc and /sys/.../cpumap write them) describe it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace launchguard {

class CpuSet {
public:
    CpuSet() = default;

    // "0-3,8,10-11"; an empty string is the empty set. Whitespace around the
    // whole list (a trailing newline from sysfs) is ignored.
    static Result<CpuSet> parse_list(std::string_view text);
    // "0xff", "ff", "0x0000000f,0xffffffff" (32-bit groups, most significant first).
    static Result<CpuSet> parse_mask(std::string_view text);

    void add(unsigned cpu);
    void add_range(unsigned first, unsigned last);
    [[nodiscard]] bool contains(unsigned cpu) const;
    [[nodiscard]] std::size_t count() const;
    [[nodiscard]] bool empty() const { return count() == 0; }
    [[nodiscard]] CpuSet intersect(const CpuSet& other) const;
    [[nodiscard]] CpuSet unite(const CpuSet& other) const;
    [[nodiscard]] bool intersects(const CpuSet& other) const;
    [[nodiscard]] std::vector<unsigned> cpus() const;
    // Canonical cpulist form: "0-3,8".
    [[nodiscard]] std::string to_list() const;

    friend bool operator==(const CpuSet& a, const CpuSet& b);

private:
    void trim();
    std::vector<std::uint64_t> words_;
};

}  // namespace launchguard
