#include "context/file_view.h"

namespace launchguard {

std::string_view to_string(FileKind kind) {
    switch (kind) {
        case FileKind::regular:
            return "regular file";
        case FileKind::directory:
            return "directory";
        case FileKind::missing:
            return "missing";
        case FileKind::dangling_symlink:
            return "dangling symlink";
        case FileKind::unreadable:
            return "unreadable";
        case FileKind::other:
            return "not a regular file";
        case FileKind::unknown:
            return "unknown";
    }
    return "unknown";
}

}  // namespace launchguard
