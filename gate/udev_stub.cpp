// libhwloc.a's Linux backend asks libudev for device names when it can, and
// reads sysfs instead when udev_new() returns null. Debian ships no static
// libudev, and a container seldom has udev's database anyway, so the static
// gate answers "no udev" itself: hwloc then reads sysfs, as it does in any
// container without /run/udev.
extern "C" {

struct udev;
struct udev_device;

udev* udev_new();
udev* udev_unref(udev* context);
udev_device* udev_device_new_from_subsystem_sysname(udev* context, const char* subsystem, const char* sysname);
udev_device* udev_device_unref(udev_device* device);
const char* udev_device_get_property_value(udev_device* device, const char* key);

udev* udev_new() { return nullptr; }
udev* udev_unref(udev* /*context*/) { return nullptr; }
udev_device* udev_device_new_from_subsystem_sysname(udev* /*context*/, const char* /*subsystem*/,
                                                    const char* /*sysname*/) {
    return nullptr;
}
udev_device* udev_device_unref(udev_device* /*device*/) { return nullptr; }
const char* udev_device_get_property_value(udev_device* /*device*/, const char* /*key*/) { return nullptr; }
}
