// Lines the CLI writes to its log (stderr) that carry values from a job are
// escaped: a manifest's key cannot write control bytes (a terminal escape, a
// forged line) into an operator's terminal or a collected log.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/run_command.h"

namespace launchguard {
namespace {

namespace fs = std::filesystem;
using testing::quote_arg;

TEST(LogEscape, AManifestsDuplicateKeyIsEscapedInTheWarning) {
    char tmpl[] = "/tmp/lg-log-escape-XXXXXX";
    const fs::path dir = ::mkdtemp(tmpl);
    const fs::path manifest = dir / "pod.yaml";
    std::ofstream(manifest) << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n"
                               "    \"a\\e[31m\\nlaunchguard: forged\": x\n"
                               "    \"a\\e[31m\\nlaunchguard: forged\": y\n"
                               "spec:\n  containers:\n  - name: c\n    image: i\n";
    const auto result =
        testing::run_command("timeout 60 " + quote_arg(LAUNCHGUARD_CLI) + " review " + quote_arg(manifest.string()));
    fs::remove_all(dir);
    ASSERT_NE(result.err.find("duplicate key"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find('\x1b'), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("\nlaunchguard: forged"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace launchguard
