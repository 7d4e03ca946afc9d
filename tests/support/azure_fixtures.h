// Field case 4 as tests replay it: an Azure ND H100 v5 VM whose image writes
// /etc/nccl.conf (the real azhpc-images ndv5.sh, a public fixture, cloud-images/)
// and keeps its topology file behind a symlink, seen through in-memory
// container and host views.
#pragma once

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "context/launch_context.h"
#include "support/launch_fixture.h"
#include "support/memory_file_view.h"
#include "support/text.h"

namespace launchguard::testing {

inline constexpr const char* kNdv5Link = "/opt/microsoft/ndv5/topo.xml";
inline constexpr const char* kNdv5File = "/opt/microsoft/ndv5-topo.xml";

// A fixture (fixture_path), byte for byte; throws (failing the test) when absent.
inline std::string fixture_text(const std::string& relative) {
    std::ifstream in(fixture_path(relative), std::ios::binary);
    if (!in) throw std::runtime_error("missing fixture " + relative);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The /etc/nccl.conf that Azure's ndv5.sh writes: the heredoc after
// `cat > /etc/nccl.conf` in the real script, extracted rather than retyped.
// It reads:
//   NCCL_IB_PCI_RELAXED_ORDERING=1
//   NCCL_TOPO_FILE=/opt/microsoft/ndv5/topo.xml
//   NCCL_IGNORE_CPU_AFFINITY=1
inline std::string azure_ndv5_conf() {
    std::istringstream script(fixture_text("cloud-images/azhpc-ndv5.sh"));
    std::string line;
    std::string conf;
    bool inside = false;
    while (std::getline(script, line)) {
        if (inside && line == "EOF") break;
        if (inside) conf += line + "\n";
        if (line.find("cat > /etc/nccl.conf") != std::string::npos) inside = true;
    }
    return conf;
}

// The image layout ndv5.sh creates: the topology file, and the symlink to it
// that /etc/nccl.conf names.
inline MemoryFileView& add_azure_topology(MemoryFileView& view,
                                          std::string contents = fixture_text("nccl-topo/ndv5-topo.xml")) {
    return view.add_file(kNdv5File, std::move(contents)).add_symlink(kNdv5Link, kNdv5File);
}

// A root as ndv5.sh leaves the VM: /etc/nccl.conf, the topology file and its
// symlink. describe() is what evidence shows as the view.
inline MemoryFileView azure_ndv5_root(std::string description = "in-memory test view") {
    MemoryFileView root(std::move(description));
    root.add_file("/etc/nccl.conf", azure_ndv5_conf());
    add_azure_topology(root);
    return root;
}

// Replaces the task's filesystem view.
inline void use_view(LaunchContext& ctx, const MemoryFileView& view) {
    ctx.files = std::make_shared<MemoryFileView>(view);
}

// Gives the launch a host side, as the enroot hook or `--host-root` does.
inline void use_host(LaunchContext& ctx, const MemoryFileView& view, Environment env = {}) {
    HostView host;
    host.env = Fact<Environment>::known(std::move(env), "test host");
    host.files = std::make_shared<MemoryFileView>(view);
    ctx.host = std::move(host);
}

}  // namespace launchguard::testing
