// --hwloc-xml: the gate in front of libhwloc. Whatever the bytes, loading
// returns a value or an error naming the file; a crash inside libhwloc is
// caught in the child process and must not reach this one.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "probe/hwloc_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = "/tmp/launchguard-fuzz-hwloc-" + std::to_string(::getpid()) + ".xml";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    auto topo = launchguard::load_topology_from_xml(path);
    if (!topo.ok() && topo.error().file != path) std::abort();
    return 0;
}
