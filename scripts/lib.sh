# Shared by the scripts: install missing Debian packages and the arm64 sysroot (both idempotent),
# and the job count.
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

install_packages() {
  local missing=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The arm64 builds of the test and runtime dependencies, unpacked into a sysroot rather than
# installed: Debian's libpthreadpool-dev is not multi-arch, so its arm64 and amd64 packages
# cannot be installed side by side. The sysroot is unpacked again only when this list changes.
LOWBIT_AARCH64_SYSROOT_PACKAGES=(libgtest-dev libcpuinfo-dev libcpuinfo0 libpthreadpool-dev
                                 libpthreadpool0 zlib1g-dev zlib1g)
install_aarch64_sysroot() {
  local sysroot=$1
  local stamp="$sysroot/.packages"
  [ "$(cat "$stamp" 2>/dev/null)" = "${LOWBIT_AARCH64_SYSROOT_PACKAGES[*]}" ] && return 0
  # apt lists arm64 packages only for a configured foreign architecture; nothing arm64 is
  # installed into the system.
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -q
  local downloads
  downloads=$(mktemp -d)
  chmod 777 "$downloads"  # apt downloads as its unprivileged _apt user
  (cd "$downloads" && apt-get download -q "${LOWBIT_AARCH64_SYSROOT_PACKAGES[@]/%/:arm64}")
  rm -rf "$sysroot"
  mkdir -p "$sysroot"
  for deb in "$downloads"/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
  rm -rf "$downloads"
  echo "${LOWBIT_AARCH64_SYSROOT_PACKAGES[*]}" >"$stamp"
}

LOWBIT_AARCH64_PACKAGES=(g++-aarch64-linux-gnu qemu-user)
# ninja-build: every script's build (configure_build); make: the installed-package consumer test,
# which builds as a user's project would, with CMake's default generator.
# libgemmlowp-dev: the tests compare lowbit with gemmlowp where it carries gemmlowp's names.
# pkgconf: the tests build a program with the flags of the installed lowbit.pc.
# pybind11-dev, python3-dev, python3-numpy: the Python module (python/, doc/python.md).
LOWBIT_BUILD_PACKAGES=(cmake ninja-build make g++ libgtest-dev libbenchmark-dev libcpuinfo-dev
                       libpthreadpool-dev zlib1g-dev libgemmlowp-dev pkgconf pybind11-dev
                       python3-dev python3-numpy)
# Fashion-MNIST (/usr/share/datasets/fashion-mnist), for the training benchmark; the tests skip it.
LOWBIT_TRAIN_DATA_PACKAGES=(dataset-fashion-mnist)
# scripts/train-bench --peers: PyTorch float32 (bench/train_pytorch.py, run by /usr/bin/python3)
# and the OpenBLAS its matrix products are pinned to (libopenblas0-pthread, the variant
# libopenblas-dev pulls in for scripts/bench --peers): with the reference libblas3 alone, Debian's
# torch multiplies an order of magnitude slower.
LOWBIT_TRAIN_PEER_PACKAGES=(python3-torch python3-numpy libopenblas0-pthread)
# scripts/fuzz: clang with libFuzzer and the sanitizer runtimes (libclang_rt.fuzzer-x86_64.a and
# <fuzzer/FuzzedDataProvider.h> are in libclang-rt-14-dev), and llvm-symbolizer for the reports.
LOWBIT_FUZZ_PACKAGES=(clang libclang-rt-14-dev llvm-14)
JOBS=$(nproc)

# Configures a build tree (configure_build <dir> <cmake options...>) for Ninja, which keeps every
# core busy: under make, a target's objects waited for the libraries it links, and on 2 cores the
# ASan+UBSan test build took 340 s where Ninja took 244. CMake will not switch a tree's generator,
# so a tree configured by another one is configured afresh.
configure_build() {
  local build=$1
  shift
  if [ -f "$build/CMakeCache.txt" ] &&
    ! grep -qx "CMAKE_GENERATOR:INTERNAL=Ninja" "$build/CMakeCache.txt"; then
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
  fi
  cmake -G Ninja -S . -B "$build" "$@"
}
