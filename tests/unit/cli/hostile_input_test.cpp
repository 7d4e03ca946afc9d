// The CLI under input a careless or malicious user controls: special files,
// endless files, files that crash libraries, hostile bytes in values, and
// contradictory flags. Each command runs under `timeout`, so a hang fails the
// test instead of the suite; exit codes 124 (timeout) and >= 128 (a signal)
// are what these tests rule out.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "support/launch_fixture.h"
#include "support/run_command.h"
#include "util/text_escape.h"

namespace launchguard {
namespace {

namespace fs = std::filesystem;
using testing::fixture_path;
using testing::quote_arg;

testing::CommandResult run(const std::string& args) {
    return testing::run_command("timeout 60 " + quote_arg(LAUNCHGUARD_CLI) + " " + args);
}

std::string hwloc_fixture() { return quote_arg(fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml")); }

// A check isolated from this machine, plus `extra`.
std::string isolated_check(const std::string& extra, const std::string& env_file = fixture_path("cli/job.env")) {
    return "check --hwloc-xml " + hwloc_fixture() + " --sysfs-root " +
           quote_arg(fixture_path("sysfs/h100-baremetal")) + " --env-file " + quote_arg(env_file) +
           " --cpus 0-3 --runtime bare " + extra;
}

class HostileInput : public ::testing::Test {
protected:
    fs::path dir;
    void SetUp() override {
        char tmpl[] = "/tmp/lg-hostile-XXXXXX";
        dir = ::mkdtemp(tmpl);
    }
    void TearDown() override { fs::remove_all(dir); }

    std::string write(const std::string& name, const std::string& text) {
        fs::path p = dir / name;
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << text;
        return p.string();
    }
    std::string fifo(const std::string& name) {
        fs::path p = dir / name;
        fs::create_directories(p.parent_path());
        EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
        return p.string();
    }
};

// The 6-line shape that makes libhwloc 2.9 (and lstopo) dereference NULL:
// a PU under a Machine that has no complete_cpuset.
constexpr const char* kHwlocCrasher =
    "<?xml version=\"1.0\"?>\n"
    "<topology version=\"2.0\">\n"
    "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" nodeset=\"0x1\">"
    "<object type=\"PU\" os_index=\"0\" cpuset=\"0x1\"/></object>\n"
    "</topology>\n";

TEST_F(HostileInput, FifosAreRefusedWithExitTwoInsteadOfBlocking) {
    const std::string fifo_path = fifo("in.fifo");
    const std::string f = quote_arg(fifo_path);
    for (const std::string& args :
         {"profile validate " + f, "topo " + f, "check --profile " + f, isolated_check("", fifo_path),
          isolated_check("--host-root / --host-env-file " + f), "check --hwloc-xml " + f,
          "topo " + quote_arg(fixture_path("nccl-topo/ndv5-topo.xml")) + " --hwloc-xml " + f}) {
        auto r = run(args);
        EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
        EXPECT_NE(r.err.find("is a FIFO"), std::string::npos) << args << "\n" << r.err;
    }
}

TEST_F(HostileInput, AFifoUnderTheSysfsRootDoesNotBlock) {
    fs::copy(fixture_path("sysfs/h100-baremetal"), dir / "sysfs", fs::copy_options::recursive);
    const fs::path governor = dir / "sysfs/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor";
    fs::remove(governor);
    fifo("sysfs/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    auto r = run("check --hwloc-xml " + hwloc_fixture() + " --sysfs-root " + quote_arg((dir / "sysfs").string()) +
                 " --env-file " + quote_arg(fixture_path("cli/job.env")) + " --cpus 0-3 --runtime bare");
    EXPECT_NE(r.exit_code, 124) << "blocked on the FIFO";
    EXPECT_LT(r.exit_code, 4) << r.err;
}

TEST_F(HostileInput, EndlessDevicesAreRefusedAndNamed) {
    fs::create_symlink("/dev/zero", dir / "topo.xml");
    fs::create_symlink("/dev/urandom", dir / "node.xml");
    auto topo = run("topo " + quote_arg((dir / "topo.xml").string()));
    EXPECT_EQ(topo.exit_code, 2);
    EXPECT_NE(topo.err.find("character device (a symlink to /dev/zero)"), std::string::npos) << topo.err;
    auto xml = run("check --hwloc-xml " + quote_arg((dir / "node.xml").string()));
    EXPECT_EQ(xml.exit_code, 2);
    EXPECT_NE(xml.err.find("/dev/urandom"), std::string::npos) << xml.err;
}

TEST_F(HostileInput, AnHwlocXmlThatCrashesLibhwlocIsRefusedNamingTheFile) {
    const std::string xml = write("crash.xml", kHwlocCrasher);
    auto check = run("check --hwloc-xml " + quote_arg(xml));
    EXPECT_EQ(check.exit_code, 2) << check.err;
    EXPECT_NE(check.err.find(xml), std::string::npos) << check.err;
    EXPECT_NE(check.err.find("libhwloc crashed"), std::string::npos) << check.err;
    auto topo = run("topo " + quote_arg(fixture_path("nccl-topo/ndv5-topo.xml")) + " --hwloc-xml " + quote_arg(xml));
    EXPECT_EQ(topo.exit_code, 2) << topo.err;
}

TEST_F(HostileInput, AConfChainNamingAStackBreakingTopologyFileDoesNotCrashCheck) {
    std::string comments;
    for (int i = 0; i < 30000; ++i) comments += "<!---->";
    write("root/opt/t.xml", comments + "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:00:1b.0\"/></cpu></system>\n");
    write("root/etc/site.conf", "NCCL_TOPO_FILE=/opt/t.xml\n");
    const std::string env = write("job.env", "NCCL_CONF_FILE=/etc/site.conf\n");
    auto r = run("check --root " + quote_arg((dir / "root").string()) + " --env-file " + quote_arg(env) +
                 " --hwloc-xml " + hwloc_fixture() + " --sysfs-root " + quote_arg(fixture_path("sysfs/h100-baremetal")) +
                 " --cpus 0-3 --runtime bare --format json");
    EXPECT_LT(r.exit_code, 4) << r.err;
    EXPECT_EQ(r.out.find("topo.nccl-rejects"), std::string::npos) << "an accepted file was judged rejected";
}

TEST_F(HostileInput, AValidFiveMebibyteTopologyFileIsNotUnterminated) {
    // NCCL's reader needs a blank after "<!--" (the name token ends there).
    write("root/opt/t.xml", "<!-- " + std::string(5U << 20, 'x') +
                                " -->\n<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:00:1b.0\"/></cpu></system>\n");
    const std::string env = write("job.env", "NCCL_TOPO_FILE=/opt/t.xml\n");
    auto r = run("check --root " + quote_arg((dir / "root").string()) + " --env-file " + quote_arg(env) +
                 " --hwloc-xml " + hwloc_fixture() + " --sysfs-root " + quote_arg(fixture_path("sysfs/h100-baremetal")) +
                 " --cpus 0-3 --runtime bare --format json");
    EXPECT_LT(r.exit_code, 4) << r.err;
    EXPECT_EQ(r.out.find("unterminated"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("topo.nccl-rejects"), std::string::npos) << r.out;
}

TEST_F(HostileInput, InvalidGpusExitTwoLikeInvalidCpus) {
    for (const char* gpus : {"0-3", "a", "99999999"}) {
        auto r = run(isolated_check(std::string("--gpus ") + gpus));
        EXPECT_EQ(r.exit_code, 2) << gpus << ": " << r.err;
        EXPECT_NE(r.err.find("--gpus"), std::string::npos) << r.err;
    }
    EXPECT_EQ(run(isolated_check("--cpus 0-x")).exit_code, 2);
}

TEST_F(HostileInput, AnEmptyFlagValueDoesNotSwallowTheNextFlag) {
    auto r = run(isolated_check("--gpus= --format json"));
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("--gpus=: empty value"), std::string::npos) << r.err;
}

TEST_F(HostileInput, OutOfRangeNumbersNameAReadableBound) {
    for (const char* args : {"check --pid 0", "check --job-gpus abc", "check --job-nodes 99999999999999999999"}) {
        auto r = run(args);
        EXPECT_EQ(r.exit_code, 2) << args;
        EXPECT_FALSE(std::regex_search(r.err, std::regex("[0-9]{30}|e\\+308"))) << args << ": " << r.err;
    }
    EXPECT_NE(run("check --pid 0").err.find("expected 1 to 2147483647"), std::string::npos);
}

TEST_F(HostileInput, ContradictoryInputsAndUndocumentedModesAreUsageErrors) {
    auto both = run(isolated_check("--pid 1"));
    EXPECT_EQ(both.exit_code, 2) << both.err;
    EXPECT_NE(both.err.find("--env-file excludes --pid"), std::string::npos) << both.err;
    EXPECT_EQ(run(isolated_check("--mode off")).exit_code, 2);
    EXPECT_EQ(run(isolated_check("--mode Enforce")).exit_code, 2);
}

TEST_F(HostileInput, AFailedReportWriteExitsTwo) {
    if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
    // An inner shell, so that this redirection is the last word on stdout.
    auto r = testing::run_command(
        "sh -c " + quote_arg("timeout 60 " + quote_arg(LAUNCHGUARD_CLI) + " " + isolated_check("") + " > /dev/full"));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("cannot write the output"), std::string::npos) << r.err;
}

TEST_F(HostileInput, ReportsStayValidWhateverBytesTheLaunchHolds) {
    const std::string env = write("job.env", "NCCL_SOCKET_IFNAME=\x1b[2J\reth\xff\xfe\nNCCL_BUFFSIZE=8M\xc3\n"
                                             "NCCL_TOPO_FILE=/opt/\xed\xa0\x80\x1b]0;x\x07.xml\n");
    auto json = run(isolated_check("--format json", env));
    EXPECT_LT(json.exit_code, 4) << json.err;
    boost::system::error_code ec;
    boost::json::parse(json.out, ec);
    EXPECT_FALSE(ec) << json.out;
    EXPECT_EQ(valid_utf8(json.out), json.out) << "the JSON report holds invalid UTF-8";

    auto text = run(isolated_check("", env));
    EXPECT_LT(text.exit_code, 4) << text.err;
    EXPECT_EQ(text.out.find('\x1b'), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find('\r'), std::string::npos) << text.out;
}

TEST_F(HostileInput, AProfileNameCannotDriveTheTerminal) {
    const std::string profile = write("p.yaml", "name: \"evil\\e[2J\\rname\"\n");
    auto r = run("profile validate " + quote_arg(profile));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("evil\\x1B[2J\\rname"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace launchguard
