// Text launchguard prints comes partly from the launch it judges: environment
// values, nccl.conf values, paths, profile names, topology attributes. Output
// must stay what the reader expects whatever those bytes are: a terminal must
// not receive escape sequences from a task's environment, and JSON must be
// valid UTF-8. Every writer routes user-controlled text through one of these.
#pragma once

#include <string>
#include <string_view>

namespace launchguard {

// Valid UTF-8 with every byte that is not part of a well-formed sequence
// (stray continuation bytes, overlong forms, surrogates, past U+10FFFF)
// replaced by U+FFFD. Valid input comes back unchanged.
std::string valid_utf8(std::string_view text);

// One line of text safe for a terminal: C0 controls (including newline, CR
// and ESC), DEL and the C1 controls are written as \n, \r, \t, \xNN or
// \u00NN; bytes that are not valid UTF-8 as \xNN. Valid printable UTF-8 is
// kept, so non-ASCII paths stay readable.
std::string printable_text(std::string_view text);

// [A-Za-z_][A-Za-z0-9_]*: a name a POSIX shell can export and enroot's
// environ file can carry.
bool is_variable_name(std::string_view name);

// enroot's fstab lines are split at blanks and decoded like /etc/fstab
// (getmntent): space, tab, newline and backslash travel as \040, \011,
// \012 and \134. Encoding keeps a path one field; decoding reads it back.
std::string fstab_escape(std::string_view field);
std::string fstab_unescape(std::string_view field);

}  // namespace launchguard
