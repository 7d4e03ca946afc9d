// The CLI under input a careless or malicious user controls: special files,
// endless files, files that crash libraries, hostile bytes in values, and
// contradictory flags. Each command runs under `timeout`, so a hang fails the
// test instead of the suite; exit codes 124 (timeout) and >= 128 (a signal)
// are what these tests rule out.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

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
    return "check --hwloc-xml " + hwloc_fixture() + " --sysfs-root " + quote_arg(fixture_path("sysfs/h100-baremetal")) +
           " --env-file " + quote_arg(env_file) + " --cpus 0-3 --runtime bare " + extra;
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
    write("root/opt/t.xml",
          comments + "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:00:1b.0\"/></cpu></system>\n");
    write("root/etc/site.conf", "NCCL_TOPO_FILE=/opt/t.xml\n");
    const std::string env = write("job.env", "NCCL_CONF_FILE=/etc/site.conf\n");
    auto r = run("check --root " + quote_arg((dir / "root").string()) + " --env-file " + quote_arg(env) +
                 " --hwloc-xml " + hwloc_fixture() + " --sysfs-root " +
                 quote_arg(fixture_path("sysfs/h100-baremetal")) + " --cpus 0-3 --runtime bare --format json");
    EXPECT_LT(r.exit_code, 4) << r.err;
    EXPECT_EQ(r.out.find("topo.nccl-rejects"), std::string::npos) << "an accepted file was judged rejected";
}

TEST_F(HostileInput, AValidFiveMebibyteTopologyFileIsNotUnterminated) {
    // NCCL's reader needs a blank after "<!--" (the name token ends there).
    write("root/opt/t.xml",
          "<!-- " + std::string(5U << 20, 'x') +
              " -->\n<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:00:1b.0\"/></cpu></system>\n");
    const std::string env = write("job.env", "NCCL_TOPO_FILE=/opt/t.xml\n");
    auto r = run("check --root " + quote_arg((dir / "root").string()) + " --env-file " + quote_arg(env) +
                 " --hwloc-xml " + hwloc_fixture() + " --sysfs-root " +
                 quote_arg(fixture_path("sysfs/h100-baremetal")) + " --cpus 0-3 --runtime bare --format json");
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
    const std::string env = write("job.env",
                                  "NCCL_SOCKET_IFNAME=\x1b[2J\reth\xff\xfe\nNCCL_BUFFSIZE=8M\xc3\n"
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

// node-check on a copy of the kvm-guest-2n tree whose cpu0 governor is
// `governor` (the power.governor finding quotes it).
class HostileNode : public HostileInput {
protected:
    std::string sysfs_with_governor(const std::string& governor) {
        fs::copy(fixture_path("sysfs/kvm-guest-2n"), dir / "sysfs",
                 fs::copy_options::recursive | fs::copy_options::copy_symlinks);
        write("sysfs/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", governor + "\n");
        return (dir / "sysfs").string();
    }
    std::string node_check(const std::string& sysfs, const std::string& extra) {
        return "node-check --no-topology-cache --hwloc-xml " + hwloc_fixture() + " --sysfs-root " + quote_arg(sysfs) +
               " " + extra;
    }
};

TEST_F(HostileNode, ControlBytesFromSysfsAreEscapedInTheNpdMessage) {
    const std::string sysfs = sysfs_with_governor("sched\x1b]0;owned\x07util\x1b[2J");
    // power.governor decides: the message NPD copies into the condition
    // quotes the governor.
    const std::string profile = write("p.yaml",
                                      "name: governor-blocks\ndescription: only the governor blocks\nrules:\n"
                                      "  power.governor: block\n  hw.pcie-degraded: off\n  numa.balancing-on: off\n"
                                      "  virt.iommu-translating: off\n  virt.iommu-strict: off\n");
    auto r = run(node_check(sysfs, "--npd --profile " + quote_arg(profile)));
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("launchguard: power.governor: ", 0), 0U) << r.out;
    EXPECT_NE(r.out.find("sched\\x1B]0;owned\\x07util"), std::string::npos) << r.out;
    for (std::size_t i = 0; i + 1 < r.out.size(); ++i) {
        const auto c = static_cast<unsigned char>(r.out[i]);
        EXPECT_FALSE(c < 0x20 || c == 0x7f) << "control byte at " << i << ": " << printable_text(r.out);
    }
    EXPECT_EQ(r.out.back(), '\n');
    EXPECT_LE(r.out.size() - 1, 80U) << r.out;
}

TEST_F(HostileNode, AnInvalidUtf8ByteInASysfsValueDoesNotMakeTheCheckUnknown) {
    const std::string sysfs = sysfs_with_governor("sched\xff\xc3util");
    // check on the same tree: the reference for what node-check must do.
    auto checked = run("check --hwloc-xml " + hwloc_fixture() + " --sysfs-root " + quote_arg(sysfs) + " --env-file " +
                       quote_arg(fixture_path("cli/job.env")) + " --cpus 0-3 --runtime bare --format json");
    EXPECT_TRUE(checked.exit_code != 2 && checked.exit_code < 4) << checked.exit_code << checked.err;

    auto json = run(node_check(sysfs, "--format json"));
    EXPECT_EQ(json.exit_code, 1) << "hw.pcie-degraded blocks, as without the byte\n" << json.err;
    boost::system::error_code ec;
    auto report = boost::json::parse(json.out, ec);
    ASSERT_FALSE(ec) << json.out;
    bool governor_found = false;
    for (const auto& f : report.at("findings").as_array()) {
        if (f.at("rule").as_string() == "power.governor") {
            governor_found = true;
            EXPECT_NE(std::string(f.at("message").as_string()).find("sched\xef\xbf\xbd\xef\xbf\xbdutil"),
                      std::string::npos)
                << f;
        }
    }
    EXPECT_TRUE(governor_found) << json.out;

    auto text = run(node_check(sysfs, ""));
    EXPECT_EQ(text.exit_code, 1) << text.err;
    EXPECT_NE(text.out.find("sched\\xFF\\xC3util"), std::string::npos) << text.out;

    auto npd = run(node_check(sysfs, "--npd"));
    EXPECT_EQ(npd.exit_code, 1) << npd.out << npd.err;
    EXPECT_EQ(npd.out.rfind("launchguard: hw.pcie-degraded: ", 0), 0U) << npd.out;

    const std::string prom = (dir / "node.prom").string();
    auto metrics = run(node_check(sysfs, "--npd --metrics-file " + quote_arg(prom)));
    EXPECT_EQ(metrics.exit_code, 1) << metrics.err;
    std::ifstream in(prom);
    const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(written.find("launchguard_node_health{health=\"degraded\"} 1\n"), std::string::npos) << written;
}

TEST_F(HostileNode, TheMetricsFileReplacesOnlyARegularFile) {
    // As root on /dev/full, the rename destroyed the device node; a FIFO and
    // a symlink show the same replacement without root.
    const std::string fifo_path = fifo("textfile/launchguard.prom");
    write("textfile/real.prom", "kept\n");
    fs::create_symlink(dir / "textfile/real.prom", dir / "textfile/link.prom");
    const std::string sysfs = fixture_path("sysfs/misconfigured-node");  // warnings only: exit 0 when written
    struct Case {
        std::string path;
        std::string says;
    };
    for (const Case& c : {Case{fifo_path, "is a FIFO, not a regular file"},
                          Case{(dir / "textfile/link.prom").string(), "is a symlink, not a regular file"},
                          Case{(dir / "textfile").string(), "is a directory, not a regular file"}}) {
        auto r = run(node_check(sysfs, "--metrics-file " + quote_arg(c.path)));
        EXPECT_EQ(r.exit_code, 2) << c.path << "\n" << r.err;
        EXPECT_NE(r.err.find("--metrics-file: " + c.path + ": " + c.says), std::string::npos) << r.err;
    }
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo_path))) << "the FIFO was replaced";
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "textfile/link.prom"))) << "the link was replaced";
    std::ifstream in(dir / "textfile/real.prom");
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), "kept\n");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir / "textfile"), fs::directory_iterator()), 3)
        << "a temporary file was left behind";
    // A regular file, or a new name, is written.
    const std::string fresh = (dir / "textfile/new.prom").string();
    EXPECT_EQ(run(node_check(sysfs, "--metrics-file " + quote_arg(fresh))).exit_code, 0);
    EXPECT_TRUE(fs::is_regular_file(fresh));
}

TEST_F(HostileInput, AnEmptyPathIsAUsageErrorNamingTheOption) {
    const std::string prom = quote_arg((dir / "x.prom").string());
    struct Case {
        std::string args;
        std::string option;
    };
    for (const Case& c : {Case{"profile compile default -o ''", "-o,--output"},
                          Case{"node-check --no-topology-cache --hwloc-xml " + hwloc_fixture() + " --sysfs-root " +
                                   quote_arg(fixture_path("sysfs/misconfigured-node")) + " --metrics-file ''",
                               "--metrics-file"},
                          Case{"node-check --slurm --config ''", "--config"},
                          Case{"check --env-file '' --hwloc-xml " + hwloc_fixture(), "--env-file"},
                          Case{"check --hwloc-xml ''", "--hwloc-xml"},
                          Case{"check --topology-cache '' --hwloc-xml " + hwloc_fixture(), "--topology-cache"},
                          Case{"profile validate ''", "file"}, Case{"topo ''", "file"}, Case{"review ''", "files"}}) {
        auto r = run(c.args);
        EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
        EXPECT_NE(r.err.find(c.option + ": empty value"), std::string::npos) << c.args << "\n" << r.err;
        EXPECT_EQ(r.out, "") << c.args;
    }
    EXPECT_FALSE(fs::exists(dir / "x.prom"));
}

// Runs launchguard with stdout a pipe whose reader is already gone, as in
// `launchguard rules | head -c1` once head has exited, and SIGPIPE at its
// default, as a shell starts it.
testing::CommandResult run_into_closed_pipe(const std::vector<std::string>& args) {
    testing::CommandResult result;
    int out[2];
    if (::pipe(out) != 0) return result;
    ::close(out[0]);
    char err_template[] = "/tmp/lg-stderr-XXXXXX";
    const int err = ::mkstemp(err_template);
    std::vector<char*> argv;
    std::string cli = LAUNCHGUARD_CLI;
    argv.push_back(cli.data());
    std::vector<std::string> copies(args);
    for (auto& a : copies) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t child = ::fork();
    if (child == 0) {
        ::signal(SIGPIPE, SIG_DFL);
        ::dup2(out[1], STDOUT_FILENO);
        ::dup2(err, STDERR_FILENO);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    ::close(out[1]);
    int status = 0;
    ::waitpid(child, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream in(err_template);
    result.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    ::close(err);
    ::unlink(err_template);
    return result;
}

TEST_F(HostileInput, AReaderThatGoesAwayIsExitTwoNotSigpipe) {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"rules"},
             {"rules", "--format", "json"},
             {"profile", "list"},
             {"--help"},
             {"profile", "compile", "default"},
             {"check", "--hwloc-xml", fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml"), "--sysfs-root",
              fixture_path("sysfs/h100-baremetal"), "--env-file", fixture_path("cli/job.env"), "--cpus", "0-3",
              "--runtime", "bare"}}) {
        auto r = run_into_closed_pipe(args);
        EXPECT_EQ(r.exit_code, 2) << args.front() << " (141 is SIGPIPE)\n" << r.err;
        EXPECT_NE(r.err.find("cannot write the output (Broken pipe)"), std::string::npos) << args.front() << "\n"
                                                                                          << r.err;
    }
}

TEST_F(HostileNode, SlurmActsOnExactlyOneNodeNamedByAHostLikeName) {
    // A stand-in scontrol that records every call and shows an idle node.
    const std::string calls = (dir / "calls").string();
    const std::string scontrol = write("scontrol", "#!/bin/sh\necho \"$*\" >> " + quote_arg(calls) +
                                                       "\necho 'NodeName=gpu017 State=IDLE Reason=(null)'\n");
    fs::permissions(scontrol, fs::perms::owner_all);
    const std::string conf = write("node-check.conf", "scontrol = " + scontrol + "\n");
    const std::string slurm = node_check(fixture_path("sysfs/kvm-guest-2n"), "--slurm");  // degraded: would drain
    auto with_env = [&](const std::string& env) {
        return testing::run_command(env + " LAUNCHGUARD_NODE_CHECK_CONF=" + quote_arg(conf) + " timeout 60 " +
                                    quote_arg(LAUNCHGUARD_CLI) + " " + slurm);
    };
    for (const std::string name : {"gpu[001-100]", "gpu01,gpu02", "gpu01 gpu02", "-gpu01", "gpu*", "gpu;reboot"}) {
        auto r = with_env("SLURMD_NODENAME=" + quote_arg(name));
        EXPECT_EQ(r.exit_code, 2) << name << "\n" << r.out << r.err;
        EXPECT_NE(r.err.find("$SLURMD_NODENAME '" + name + "' must be one Slurm node name"), std::string::npos)
            << name << "\n"
            << r.err;
        EXPECT_NE(r.out.find("$SLURMD_NODENAME"), std::string::npos) << "slurmd logs stdout: " << r.out;
        EXPECT_FALSE(fs::exists(calls)) << name << ": scontrol was run";
    }
    // The same hostlist from the configuration names the file and line.
    const std::string hostlist_conf = write("hostlist.conf", "scontrol = " + scontrol + "\nnode-name = x[001-100]\n");
    auto configured = testing::run_command("LAUNCHGUARD_NODE_CHECK_CONF=" + quote_arg(hostlist_conf) + " timeout 60 " +
                                           quote_arg(LAUNCHGUARD_CLI) + " " + slurm);
    EXPECT_EQ(configured.exit_code, 2) << configured.err;
    EXPECT_NE(configured.err.find(hostlist_conf + ":2: node-name: must be one Slurm node name"), std::string::npos)
        << configured.err;
    EXPECT_FALSE(fs::exists(calls));

    // One plain name reaches scontrol, as one argument.
    auto named = with_env("SLURMD_NODENAME=gpu017");
    EXPECT_EQ(named.exit_code, 1) << named.err;
    std::ifstream in(calls);
    const std::string called((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(called.find("show node gpu017 --oneliner\n"), std::string::npos) << called;
    EXPECT_NE(called.find("update NodeName=gpu017 State=DRAIN Reason=launchguard: hw.pcie-degraded"), std::string::npos)
        << called;
}

}  // namespace
}  // namespace launchguard
