#include "util/text_escape.h"

#include <gtest/gtest.h>

namespace launchguard {
namespace {

TEST(ValidUtf8, KeepsValidTextAndReplacesEveryInvalidByte) {
    EXPECT_EQ(valid_utf8("plain /opt/topo.xml"), "plain /opt/topo.xml");
    EXPECT_EQ(valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    EXPECT_EQ(valid_utf8("a\xFF"
                         "b"),
              "a\xEF\xBF\xBD"
              "b");
    EXPECT_EQ(valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
    EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
    EXPECT_EQ(valid_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // cut short at the end
    EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // > U+10FFFF
}

TEST(PrintableText, EscapesWhatATerminalWouldObey) {
    EXPECT_EQ(printable_text("eth0"), "eth0");
    EXPECT_EQ(printable_text("a\x1b[2Jb"), "a\\x1B[2Jb");
    EXPECT_EQ(printable_text("line1\nline2\r"), "line1\\nline2\\r");
    EXPECT_EQ(printable_text("tab\there"), "tab\\there");
    EXPECT_EQ(printable_text(std::string("nul\0x", 5)), "nul\\x00x");
    EXPECT_EQ(printable_text("\x7f"), "\\x7F");
    EXPECT_EQ(printable_text("\xC2\x9B"
                             "31m"),
              "\\u009B31m");  // the C1 CSI
    EXPECT_EQ(printable_text("bad\xFF"), "bad\\xFF");
    EXPECT_EQ(printable_text("caf\xC3\xA9"), "caf\xC3\xA9");
}

TEST(VariableName, AcceptsOnlyShellIdentifiers) {
    EXPECT_TRUE(is_variable_name("NCCL_IB_HCA"));
    EXPECT_TRUE(is_variable_name("_x1"));
    EXPECT_FALSE(is_variable_name(""));
    EXPECT_FALSE(is_variable_name("1NCCL"));
    EXPECT_FALSE(is_variable_name("NCCL_A$(touch x)"));
    EXPECT_FALSE(is_variable_name("NCCL A"));
}

TEST(FstabField, EncodesBlanksAndBackslashesAndReadsThemBack) {
    const std::string path = "/opt/my topo\tdir\\x\nfile.xml";
    const std::string encoded = fstab_escape(path);
    EXPECT_EQ(encoded, "/opt/my\\040topo\\011dir\\134x\\012file.xml");
    EXPECT_EQ(encoded.find_first_of(" \t\n"), std::string::npos);
    EXPECT_EQ(fstab_unescape(encoded), path);
    EXPECT_EQ(fstab_unescape("/a\\999b\\"), "/a\\999b\\");  // only the four codes getmntent knows
}

}  // namespace
}  // namespace launchguard
