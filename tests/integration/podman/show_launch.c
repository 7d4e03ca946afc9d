/* The workload of the podman gate test: prints what it was started with, so
 * the test can compare it with the pod spec byte for byte. Built static by the
 * test and put alone in an image (no shell, no libc to load), as a distroless
 * image would be. Each line: "uid U gid G", then "argv HEX" per argument and
 * "env HEX" per environment entry, in order, each value hex-encoded so spaces,
 * quotes and non-ASCII bytes survive podman's log. */
#include <stdio.h>
#include <unistd.h>

extern char** environ;

static void print_hex(const char* label, const char* value) {
    fputs(label, stdout);
    fputc(' ', stdout);
    for (const unsigned char* p = (const unsigned char*)value; *p != '\0'; ++p) {
        printf("%02x", *p);
    }
    fputc('\n', stdout);
}

int main(int argc, char** argv) {
    printf("uid %u gid %u\n", (unsigned)getuid(), (unsigned)getgid());
    for (int i = 0; i < argc; ++i) {
        print_hex("argv", argv[i]);
    }
    for (char** entry = environ; *entry != NULL; ++entry) {
        print_hex("env", *entry);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
