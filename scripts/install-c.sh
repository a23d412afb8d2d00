#!/usr/bin/env bash
# Installs the pi-agent C library into a prefix, laid out as C and C++ build systems expect:
#
#   PREFIX/include/pi_agent.h
#   PREFIX/lib/libpi_agent.so.X.Y.Z            the shared library, SONAME libpi_agent.so.<soversion>
#   PREFIX/lib/libpi_agent.so.<soversion>      -> libpi_agent.so.X.Y.Z  (what programs load)
#   PREFIX/lib/libpi_agent.so                  -> libpi_agent.so.<soversion>  (what -lpi_agent finds)
#   PREFIX/lib/libpi_agent.a                   the static library
#   PREFIX/lib/pkgconfig/pi_agent.pc           pkg-config --cflags --libs pi_agent
#   PREFIX/lib/cmake/pi_agent/pi_agentConfig.cmake, pi_agentConfigVersion.cmake
#                                              find_package(pi_agent): pi_agent::pi_agent (shared)
#                                              and pi_agent::pi_agent_static
#
# <soversion> is the major version, or 0.<minor> while the major version is 0 (ffi/build.rs
# gives the library that SONAME). Linux only for now.
#
# Usage: scripts/install-c.sh [--prefix DIR] [--libdir DIR] [--includedir DIR]
#                             [--destdir DIR] [--profile NAME | --from DIR]
#   --prefix DIR      where to install (default /usr/local)
#   --libdir DIR      libraries, pkgconfig/ and cmake/ (default PREFIX/lib)
#   --includedir DIR  the header (default PREFIX/include)
#   --destdir DIR     stage the files under DIR, for packaging; the installed files still
#                     refer to PREFIX (default: $DESTDIR)
#   --profile NAME    build with `cargo build --profile NAME -p pi-agent-ffi` first
#                     (default release)
#   --from DIR        install the libraries already built in DIR (libpi_agent_ffi.so and
#                     libpi_agent_ffi.a, e.g. target/release) without running cargo
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
templates="$root/scripts/c-package"

prefix=/usr/local
libdir=""
includedir=""
destdir="${DESTDIR:-}"
profile=release
from=""

die() {
  echo "install-c.sh: $*" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix | --libdir | --includedir | --destdir | --profile | --from)
      [ $# -ge 2 ] || die "$1 needs a value"
      value="$2"
      case "$1" in
        --prefix) prefix="$value" ;;
        --libdir) libdir="$value" ;;
        --includedir) includedir="$value" ;;
        --destdir) destdir="$value" ;;
        --profile) profile="$value" ;;
        --from) from="$value" ;;
      esac
      shift 2
      ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done

[ "$(uname -s)" = Linux ] || die "only Linux is supported so far (SONAME and system libraries)"
case "$prefix" in /*) ;; *) die "--prefix must be an absolute path" ;; esac
prefix="${prefix%/}"
libdir="${libdir:-$prefix/lib}"
includedir="${includedir:-$prefix/include}"
case "$libdir$includedir" in *'@'* | *'|'*) die "paths must not contain '@' or '|'" ;; esac
case "$libdir" in /*) ;; *) die "--libdir must be an absolute path" ;; esac
case "$includedir" in /*) ;; *) die "--includedir must be an absolute path" ;; esac

# The version comes from the header, which a test keeps equal to Cargo's version.
header="$root/include/pi_agent.h"
version_part() {
  sed -n "s/^#define PI_AGENT_VERSION_$1 \([0-9][0-9]*\)\$/\1/p" "$header"
}
major="$(version_part MAJOR)"
minor="$(version_part MINOR)"
patch="$(version_part PATCH)"
if [ -z "$major" ] || [ -z "$minor" ] || [ -z "$patch" ]; then
  die "no version macros in $header"
fi
version="$major.$minor.$patch"
if [ "$major" = 0 ]; then soversion="0.$minor"; else soversion="$major"; fi
soname="libpi_agent.so.$soversion"

if [ -z "$from" ]; then
  (cd "$root" && cargo build --profile "$profile" -p pi-agent-ffi --lib)
  target_dir="${CARGO_TARGET_DIR:-}"
  if [ -z "$target_dir" ]; then
    target_dir="$(cd "$root" && cargo metadata --format-version 1 --no-deps |
      sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
  fi
  case "$profile" in dev) from="$target_dir/debug" ;; *) from="$target_dir/$profile" ;; esac
fi
shared="$from/libpi_agent_ffi.so"
static="$from/libpi_agent_ffi.a"
[ -f "$shared" ] || die "$shared is missing"
[ -f "$static" ] || die "$static is missing"
if command -v readelf >/dev/null; then
  built_soname="$(readelf -d "$shared" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  [ "$built_soname" = "$soname" ] ||
    die "$shared has SONAME '$built_soname', expected '$soname' (a stale build?)"
fi

# The ELF class byte (1: 32-bit, 2: 64-bit) says the pointer size, for CMake's version check.
case "$(od -An -tu1 -j4 -N1 "$shared" | tr -d ' ')" in
  1) pointer_bytes=4 ;;
  2) pointer_bytes=8 ;;
  *) die "$shared is not an ELF library" ;;
esac

# What a program linking the static library needs besides it: `rustc --print
# native-static-libs` for this crate on Linux (the install test links a program with it).
static_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

stage_lib="$destdir$libdir"
stage_include="$destdir$includedir"
install -d "$stage_lib" "$stage_include" "$stage_lib/pkgconfig" "$stage_lib/cmake/pi_agent"
install -m 0755 "$shared" "$stage_lib/libpi_agent.so.$version"
ln -sfn "libpi_agent.so.$version" "$stage_lib/$soname"
ln -sfn "$soname" "$stage_lib/libpi_agent.so"
install -m 0644 "$static" "$stage_lib/libpi_agent.a"
install -m 0644 "$header" "$stage_include/pi_agent.h"

# pkg-config variables stay relative to ${prefix} where they can.
pc_libdir="$libdir"
pc_includedir="$includedir"
case "$libdir" in "$prefix"/*) pc_libdir="\${prefix}${libdir#"$prefix"}" ;; esac
case "$includedir" in "$prefix"/*) pc_includedir="\${prefix}${includedir#"$prefix"}" ;; esac

fill() {
  sed -e "s|@PREFIX@|$prefix|g" \
    -e "s|@PC_LIBDIR@|$pc_libdir|g" \
    -e "s|@PC_INCLUDEDIR@|$pc_includedir|g" \
    -e "s|@LIBDIR@|$libdir|g" \
    -e "s|@INCLUDEDIR@|$includedir|g" \
    -e "s|@VERSION@|$version|g" \
    -e "s|@VERSION_MAJOR@|$major|g" \
    -e "s|@VERSION_MINOR@|$minor|g" \
    -e "s|@SONAME@|$soname|g" \
    -e "s|@POINTER_BYTES@|$pointer_bytes|g" \
    -e "s|@STATIC_LIBS@|$static_libs|g" \
    -e "s|@STATIC_LIBS_CMAKE@|${static_libs// /;}|g" \
    "$1" >"$2"
  chmod 0644 "$2"
}
fill "$templates/pi_agent.pc.in" "$stage_lib/pkgconfig/pi_agent.pc"
fill "$templates/pi_agentConfig.cmake.in" "$stage_lib/cmake/pi_agent/pi_agentConfig.cmake"
fill "$templates/pi_agentConfigVersion.cmake.in" \
  "$stage_lib/cmake/pi_agent/pi_agentConfigVersion.cmake"

echo "installed pi_agent $version into $destdir$prefix"
if [ -z "$destdir" ]; then
  echo "programs find it with: pkg-config --cflags --libs pi_agent (PKG_CONFIG_PATH=$libdir/pkgconfig)"
  echo "or CMake's find_package(pi_agent) (CMAKE_PREFIX_PATH=$prefix); at run time the loader"
  echo "needs $libdir in its path (ldconfig, an rpath, or LD_LIBRARY_PATH)"
fi
