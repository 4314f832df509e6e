# Cross build for aarch64-linux-gnu with clang-19 and lld-19 (scripts/test-aarch64 uses it with
# -DSHAPETRACE_RUNTIME_ONLY=ON). The C and C++ libraries are Debian's cross toolchain packages
# (/usr/aarch64-linux-gnu, which clang finds by itself for this target); the libraries the runtime
# links are the arm64 multiarch packages (libcapnp-dev:arm64, libxxhash-dev:arm64, in
# /usr/lib/aarch64-linux-gnu). The Cap'n Proto compiler is the build machine's (/usr/bin/capnp).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER clang-19)
set(CMAKE_CXX_COMPILER clang++-19)
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_ASM_COMPILER_TARGET aarch64-linux-gnu)
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT -fuse-ld=lld)
endforeach()

# pkg-config looks at the target's .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
