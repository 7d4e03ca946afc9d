// /etc/launchguard/node-check.conf: every key, and every way a line can be
// wrong, with the error naming the file, the line and the key.
#include <gtest/gtest.h>

#include "node/node_check_config.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

const std::string kOrigin = "/etc/launchguard/node-check.conf";

Error parse_error(const std::string& text) {
    auto config = parse_node_check_config(text, kOrigin);
    EXPECT_FALSE(config.ok()) << "accepted: " << text;
    return config ? Error{} : config.error();
}

TEST(NodeCheckConfig, EmptyTextIsTheDefaults) {
    auto config = parse_node_check_config("", kOrigin);
    ASSERT_TRUE(config.ok());
    EXPECT_EQ(config->profile, "default");
    EXPECT_EQ(config->options.mode, Mode::enforce);
    EXPECT_EQ(config->timeout, std::chrono::seconds(10));
    EXPECT_EQ(config->on_unknown, OnUnknown::keep);
    EXPECT_EQ(config->options.topology_cache, kDefaultTopologyCachePath);
    EXPECT_FALSE(config->scontrol || config->slurm_conf || config->node_name || config->metrics_file ||
                 config->log_file || config->options.hwloc_xml || config->options.sysfs_root);
}

TEST(NodeCheckConfig, EveryKey) {
    const std::string text =
        "# node health for the H100 partition\n"
        "\n"
        "profile = h100-cx7-ib\n"
        "mode=warn\n"
        "  timeout =  25  \n"
        "on-unknown = drain\n"
        "topology-cache = /run/lg/topology.json\n"
        "topology-cache-max-age = 600\n"
        "hwloc-xml = /srv/fixture/node.xml\n"
        "sysfs-root = /srv/fixture/#1\n"
        "scontrol = /opt/slurm/bin/scontrol\n"
        "slurm-conf = /etc/slurm/slurm.conf\n"
        "node-name = gpu017\n"
        "metrics-file = /var/lib/node_exporter/launchguard.prom\n"
        "record-dir = /shared/launchguard/records\n"
        "node-class = h100-a\n"
        "log-file = /var/log/launchguard-node-check.log\n";
    auto config = parse_node_check_config(text, kOrigin);
    ASSERT_TRUE(config.ok()) << config.error().to_string();
    EXPECT_EQ(config->profile, "h100-cx7-ib");
    EXPECT_EQ(config->options.mode, Mode::warn);
    EXPECT_EQ(config->timeout, std::chrono::seconds(25));
    EXPECT_EQ(config->on_unknown, OnUnknown::drain);
    EXPECT_EQ(config->options.topology_cache, "/run/lg/topology.json");
    EXPECT_EQ(config->options.topology_cache_max_age, 600);
    EXPECT_EQ(config->options.hwloc_xml, "/srv/fixture/node.xml");
    EXPECT_EQ(config->options.sysfs_root, "/srv/fixture/#1");  // '#' inside a value is not a comment
    EXPECT_EQ(config->scontrol, "/opt/slurm/bin/scontrol");
    EXPECT_EQ(config->slurm_conf, "/etc/slurm/slurm.conf");
    EXPECT_EQ(config->node_name, "gpu017");
    EXPECT_EQ(config->metrics_file, "/var/lib/node_exporter/launchguard.prom");
    EXPECT_EQ(config->record_dir, "/shared/launchguard/records");
    EXPECT_EQ(config->node_class, "h100-a");
    EXPECT_EQ(config->log_file, "/var/log/launchguard-node-check.log");
}

TEST(NodeCheckConfig, WindowsLineEndingsAreAccepted) {
    auto config = parse_node_check_config("profile = gb200-nvl72\r\nmode = patch\r\n", kOrigin);
    ASSERT_TRUE(config.ok()) << config.error().to_string();
    EXPECT_EQ(config->profile, "gb200-nvl72");
    EXPECT_EQ(config->options.mode, Mode::patch);
}

TEST(NodeCheckConfig, ErrorsNameFileLineAndKey) {
    Error e = parse_error("profile = default\n\nprofiel = h100\n");
    EXPECT_EQ(e.file, kOrigin);
    EXPECT_EQ(e.line, 3);
    EXPECT_EQ(e.field, "profiel");
    EXPECT_NE(e.message.find("unknown key"), std::string::npos);
    EXPECT_NE(e.message.find("on-unknown"), std::string::npos) << "lists the keys: " << e.message;
    EXPECT_EQ(e.to_string().rfind(kOrigin + ":3: profiel: ", 0), 0U) << e.to_string();
}

TEST(NodeCheckConfig, EachBadValueIsRefused) {
    struct Case {
        std::string line;
        std::string key;
        std::string says;
    };
    const Case cases[] = {
        {"mode = audit", "mode", "enforce, patch, warn or off"},
        {"timeout = 0", "timeout", "1 to 30"},
        {"timeout = 31", "timeout", "60 s"},
        {"timeout = 10s", "timeout", "whole number"},
        {"timeout = -1", "timeout", "whole number"},
        {"on-unknown = ignore", "on-unknown", "keep or drain"},
        {"topology-cache = run/topology.json", "topology-cache", "absolute path"},
        {"topology-cache-max-age = soon", "topology-cache-max-age", "whole number"},
        {"hwloc-xml = node.xml", "hwloc-xml", "absolute path"},
        {"sysfs-root = fixture", "sysfs-root", "absolute path"},
        {"scontrol = scontrol", "scontrol", "absolute path"},
        {"slurm-conf = slurm.conf", "slurm-conf", "absolute path"},
        {"node-name = gpu01 gpu02", "node-name", "one Slurm node name"},
        {"node-name = gpu01,gpu02", "node-name", "one Slurm node name"},
        {"metrics-file = launchguard.prom", "metrics-file", "absolute path"},
        {"log-file = node-check.log", "log-file", "absolute path"},
        {"record-dir = records", "record-dir", "absolute path"},
        {"profile =", "profile", "has no value"},
    };
    for (const auto& c : cases) {
        auto config = parse_node_check_config("# line 1\n" + c.line + "\n", kOrigin);
        ASSERT_FALSE(config.ok()) << c.line;
        EXPECT_EQ(config.error().line, 2) << c.line;
        EXPECT_EQ(config.error().field, c.key) << c.line;
        EXPECT_NE(config.error().message.find(c.says), std::string::npos) << c.line << " -> " << config.error().message;
    }
}

TEST(NodeCheckConfig, MalformedLines) {
    Error no_equals = parse_error("profile default\n");
    EXPECT_EQ(no_equals.line, 1);
    EXPECT_NE(no_equals.message.find("key = value"), std::string::npos);

    Error no_key = parse_error("mode = warn\n= default\n");
    EXPECT_EQ(no_key.line, 2);
    EXPECT_NE(no_key.message.find("without a key"), std::string::npos);

    Error twice = parse_error("mode = warn\nmode = enforce\n");
    EXPECT_EQ(twice.line, 2);
    EXPECT_EQ(twice.field, "mode");
    EXPECT_NE(twice.message.find("twice"), std::string::npos);

    Error nul = parse_error(std::string("profile = a\0b\n", 14));
    EXPECT_EQ(nul.line, 1);
    EXPECT_NE(nul.message.find("NUL"), std::string::npos);
}

TEST(NodeCheckConfig, LoadingAFile) {
    test::TempTree tree;
    tree.write("node-check.conf", "profile = bare-metal\n");
    auto loaded = load_node_check_config(tree.path("node-check.conf"), true);
    ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
    EXPECT_EQ(loaded->profile, "bare-metal");

    // The default path may be absent (defaults); a named one may not.
    auto absent_default = load_node_check_config(tree.path("missing.conf"), false);
    ASSERT_TRUE(absent_default.ok());
    EXPECT_EQ(absent_default->profile, "default");
    auto absent_named = load_node_check_config(tree.path("missing.conf"), true);
    ASSERT_FALSE(absent_named.ok());
    EXPECT_EQ(absent_named.error().file, tree.path("missing.conf"));

    // Errors inside a loaded file name that file.
    tree.write("bad.conf", "profile = x\ntimeout = forever\n");
    auto bad = load_node_check_config(tree.path("bad.conf"), true);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().file, tree.path("bad.conf"));
    EXPECT_EQ(bad.error().line, 2);

    // Bounded like every input launchguard reads: a FIFO is refused, not read.
    ASSERT_EQ(::mkfifo(tree.path("fifo.conf").c_str(), 0600), 0);
    auto fifo = load_node_check_config(tree.path("fifo.conf"), true);
    ASSERT_FALSE(fifo.ok());
    EXPECT_NE(fifo.error().message.find("not a regular file"), std::string::npos) << fifo.error().message;
}

TEST(NodeCheckConfig, NodeNameIsExactlyOneHostLikeName) {
    // scontrol reads a hostlist as many nodes: "x[001-100]" would drain 100.
    for (const std::string& bad : std::vector<std::string>{
             "gpu[001-100]", "gpu01,gpu02", "gpu01 gpu02", "-gpu01", ".gpu01", "gpu*", "gpu?", "gpu01;reboot",
             "gpu$(id)", "gpu`id`", "gpu{1,2}", "gpu01=x", "gpu/01", "gpu:01", "gpu\x1b[2J",
             "gp\xc3\xbc"
             "01",
             std::string(kMaxSlurmNodeNameBytes + 1, 'a')}) {
        Error e = parse_error("# line 1\nnode-name = " + bad + "\n");
        EXPECT_EQ(e.line, 2) << bad;
        EXPECT_EQ(e.field, "node-name") << bad;
        EXPECT_NE(e.message.find("must be one Slurm node name"), std::string::npos) << bad << " -> " << e.message;
        EXPECT_NE(e.message.find("got '" + bad + "'"), std::string::npos) << e.message;
    }
    for (const std::string& good :
         std::vector<std::string>{"gpu017", "a", "GPU-017.rack_2", std::string(kMaxSlurmNodeNameBytes, 'a')}) {
        auto config = parse_node_check_config("node-name = " + good + "\n", kOrigin);
        ASSERT_TRUE(config.ok()) << good << ": " << config.error().to_string();
        EXPECT_EQ(config->node_name, good);
    }
}

}  // namespace
}  // namespace launchguard
