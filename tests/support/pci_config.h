// Binary PCI Express configuration space for sysfs fixtures: what
// /sys/bus/pci/devices/<busid>/config holds, built from the capabilities a
// test names, so a fixture says "ACS with redirect on" instead of carrying
// an opaque blob.
//
//   std::string config = PciConfigSpace().aer().acs(0x001d).bytes();
//   tree.write("sys/bus/pci/devices/0000:16:01.0/config", config);
//
// Extended capabilities are laid out from 0x100 in the order added, each
// header holding its ID (bits 15:0), version 1 (19:16) and the offset of the
// next one (31:20; 0 ends the list), all little-endian.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace launchguard::testing {

class PciConfigSpace {
public:
    // Advanced Error Reporting (ID 0x0001, 0x48 bytes): a capability the
    // parser must walk past.
    PciConfigSpace& aer() { return add(0x0001, std::vector<std::uint8_t>(0x44, 0)); }
    // ACS (ID 0x000D): Capability register (+4), Control register (+6).
    PciConfigSpace& acs(std::uint16_t control, std::uint16_t capability = 0x005f) {
        return add(0x000D, {lo(capability), hi(capability), lo(control), hi(control)});
    }
    // ATS (ID 0x000F): Capability register (+4), Control register (+6).
    PciConfigSpace& ats(std::uint16_t control, std::uint16_t capability = 0x0020) {
        return add(0x000F, {lo(capability), hi(capability), lo(control), hi(control)});
    }
    PciConfigSpace& add(std::uint16_t id, std::vector<std::uint8_t> body) {
        caps_.push_back({id, std::move(body)});
        return *this;
    }

    // The config space, cut to `size` bytes (64: what an unprivileged reader gets).
    [[nodiscard]] std::string bytes(std::size_t size = 4096) const {
        std::string space(4096, '\0');
        // A type 1 (bridge) header is enough: vendor 0x10b5, device 0x9797.
        put(space, 0, 0x979710b5U, 4);
        std::size_t offset = 0x100;
        for (std::size_t i = 0; i < caps_.size(); ++i) {
            std::size_t length = (4 + caps_[i].body.size() + 3) / 4 * 4;
            std::size_t next = i + 1 < caps_.size() ? offset + length : 0;
            put(space, offset, caps_[i].id | (1U << 16) | (static_cast<std::uint32_t>(next) << 20), 4);
            for (std::size_t b = 0; b < caps_[i].body.size(); ++b)
                space[offset + 4 + b] = static_cast<char>(caps_[i].body[b]);
            offset += length;
        }
        return space.substr(0, size);
    }

private:
    struct Cap {
        std::uint32_t id;
        std::vector<std::uint8_t> body;
    };
    static std::uint8_t lo(std::uint16_t v) { return static_cast<std::uint8_t>(v & 0xffU); }
    static std::uint8_t hi(std::uint16_t v) { return static_cast<std::uint8_t>(v >> 8); }
    static void put(std::string& space, std::size_t offset, std::uint32_t value, std::size_t width) {
        for (std::size_t i = 0; i < width; ++i) space[offset + i] = static_cast<char>((value >> (8 * i)) & 0xffU);
    }
    std::vector<Cap> caps_;
};

}  // namespace launchguard::testing
