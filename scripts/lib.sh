# Shared by the scripts: install missing Debian packages (idempotent), and the job count.
install_packages() {
  local missing=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

LOWBIT_BUILD_PACKAGES=(cmake make g++ pkg-config libgtest-dev libbenchmark-dev libcpuinfo-dev
                       libpthreadpool-dev)
JOBS=$(nproc)
