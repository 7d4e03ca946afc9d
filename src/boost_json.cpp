// Boost.JSON's implementation, compiled once into the project (Boost.JSON's
// documented header-only use) rather than linked from libboost_json.so:
// spank_launchguard_core.so carries it together with a static, hidden C++
// runtime, and Debian's libboost_json.a cannot go into a shared object.
#include <boost/json/src.hpp>
