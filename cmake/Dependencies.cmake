# Every dependency comes through pkg-config as an imported target. Not find_package(cnats):
# Debian ships only nats.c's shared library, yet its CMake package file still declares
# cnats::nats_static, which points at a file that is not installed; pkg-config's
# `libnats` (not `nats`) is right.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(NATS REQUIRED IMPORTED_TARGET libnats)           # nats.c 3.4.1
pkg_check_modules(PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c)
pkg_check_modules(YAML REQUIRED IMPORTED_TARGET yaml-0.1)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)      # JSON ($SRV, advisories, ports file)
find_program(PROTOC_C protoc-c REQUIRED)
find_program(NATS_SERVER nats-server PATHS /usr/sbin /usr/local/sbin REQUIRED)
