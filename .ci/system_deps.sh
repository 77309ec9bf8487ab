#!/bin/sh
# The Debian packages tests/test_cross_run.py runs cross-built code with:
# qemu-user (qemu-aarch64, qemu-riscv64), the aarch64 and riscv64 cross gcc with
# their C libraries (libgomp comes with the gcc), and lld (wasm-ld); and for
# tests/test_target_c.py the Cortex-M toolchain and newlib (its headers; micro-mode
# C source compiled for a Cortex-M4) with qemu-system-arm, the MPS2-AN386 board
# tests/test_mcu.py runs a model on; and the OpenCL ICD loader with PoCL, a CPU
# OpenCL platform that tests/test_runtime_opencl.py runs kernels on; and for
# tests/test_target_vulkan.py glslangValidator (GLSL to SPIR-V), the Vulkan loader
# and Mesa's lavapipe, a CPU Vulkan driver.
#
# `make test` runs this first. When every tool is there it only looks them up.
# Otherwise, as root with apt-get, it runs `apt-get update` once and installs
# what is missing; anywhere else (or when apt-get fails) it says what is
# missing and exits 0: the tests that need it skip, naming the package.
set -u

# tool (a program on PATH, or a file) : the package that brings it
DEPS="qemu-aarch64:qemu-user qemu-riscv64:qemu-user
aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu
riscv64-linux-gnu-gcc:gcc-riscv64-linux-gnu
/usr/aarch64-linux-gnu/lib/crti.o:libc6-dev-arm64-cross
/usr/riscv64-linux-gnu/lib/crti.o:libc6-dev-riscv64-cross
wasm-ld:lld
arm-none-eabi-gcc:gcc-arm-none-eabi
/usr/lib/arm-none-eabi/newlib/libc.a:libnewlib-arm-none-eabi
qemu-system-arm:qemu-system-arm
/usr/lib/x86_64-linux-gnu/libOpenCL.so.1:ocl-icd-libopencl1
/etc/OpenCL/vendors/pocl.icd:pocl-opencl-icd
glslangValidator:glslang-tools
/usr/lib/x86_64-linux-gnu/libvulkan.so.1:libvulkan1
/usr/share/vulkan/icd.d/lvp_icd.x86_64.json:mesa-vulkan-drivers"

missing=""
for dep in $DEPS; do
  tool=${dep%%:*}
  package=${dep#*:}
  case $tool in
    /*) [ -e "$tool" ] ;;
    *) command -v "$tool" >/dev/null 2>&1 ;;
  esac && continue
  case " $missing " in
    *" $package "*) ;;
    *) missing="$missing $package" ;;
  esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086 # one word per package
  if apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null; then
    exit 0
  fi
  echo "system-deps: apt-get could not install$missing; the tests that need them skip" >&2
else
  echo "system-deps: missing$missing (installing needs root and apt-get);" \
    "the tests that need them skip: apt-get install$missing" >&2
fi
exit 0
