// `install`: what the init container runs to put the gate and the profile
// into the volume the GPU container mounts.
#include <sys/stat.h>

#include <string>

#include "engine/profile_loader.h"
#include "gate/gate.h"
#include "profile/profile_source.h"
#include "util/atomic_file.h"
#include "util/input_file.h"

namespace launchguard {
namespace {

// The gate is about 10 MB stripped and about 70 MB with its debug info (a
// RelWithDebInfo build, as the tests run it); a /proc/self/exe far larger than
// that is not this program.
constexpr std::size_t kMaxExecutableBytes = 256U << 20;

}  // namespace

Status install_gate(const GateInstallOptions& options) {
    struct stat st {};
    if (::stat(options.into.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        return make_file_error(options.into, 0, "--into: not a directory (the volume shared with the container)");
    if (options.profile_yaml && options.profile_name) return make_error("give --profile-yaml or --profile, not both");

    std::string yaml;
    std::string origin = "--profile-yaml";
    if (options.profile_yaml) {
        yaml = *options.profile_yaml;
    } else {
        const std::string name = options.profile_name.value_or("default");
        const EmbeddedProfile* embedded = find_embedded_profile(embedded_profiles(), name);
        if (embedded == nullptr) return unknown_profile_name(name, embedded_profiles());
        yaml = std::string(embedded->text);
        origin = "embedded:" + name;
    }
    // Every run would refuse a profile that does not load: fail here, once,
    // where the pod's events show it.
    if (auto parsed = parse_profile(yaml, origin); !parsed) return parsed.error();

    auto executable = read_text_file(options.self, kMaxExecutableBytes);
    if (!executable) return executable.error();
    const std::string dir = options.into.ends_with('/') ? options.into : options.into + "/";
    if (auto written = write_file_atomically(dir + std::string(kGateExecutableName), *executable, 0555); !written)
        return written.error();
    return write_file_atomically(dir + std::string(kGateProfileName), yaml, 0444);
}

}  // namespace launchguard
