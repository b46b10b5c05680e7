#!/bin/sh
# test/unit/rt_example_nogpu.sh: the installed runtime as a user sees it.
# Installs the "attnrt" component of this build into a scratch prefix, builds
# examples/c there with ATTN_EXAMPLE_GPU=OFF (only attnrt_probe, through
# find_package(attnrt)), and also builds the probe through pkg-config against
# libattnrt.so; with no usable driver (ATTNRT_CUDA_DRIVER points nowhere) each
# must print exactly one line starting with "attnrt:" and exit nonzero.
#
# usage: rt_example_nogpu.sh CMAKE BUILD_DIR EXAMPLE_DIR SCRATCH CC "FLAGS"
set -eu
cmake=$1 build=$2 example=$3 scratch=$4 cc=$5 flags=$6
prefix=$scratch/prefix
rm -rf "$scratch"
mkdir -p "$scratch"

"$cmake" --install "$build" --prefix "$prefix" --component attnrt >"$scratch/install.log"
for f in lib/libattnrt.a lib/libattnrt.so include/attnrt.h lib/cmake/attnrt/attnrtConfig.cmake \
	lib/cmake/attnrt/attnrtConfigVersion.cmake lib/cmake/attnrt/attnrtTargets.cmake \
	lib/pkgconfig/attnrt.pc; do
	[ -e "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
[ ! -e "$prefix/include/driver.h" ] || { echo "FAIL: the internal driver.h was installed"; exit 1; }

"$cmake" -S "$example" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$prefix" -DATTN_EXAMPLE_GPU=OFF \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
	>"$scratch/configure.log" 2>&1 || { cat "$scratch/configure.log"; exit 1; }
"$cmake" --build "$scratch/build" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; exit 1; }

# check NAME PROGRAM: one line "attnrt: ...", nonzero exit
check() {
	set +e
	ATTNRT_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$2" >"$scratch/$1.out" 2>&1
	status=$?
	set -e
	lines=$(wc -l <"$scratch/$1.out")
	first=$(head -c 8 "$scratch/$1.out")
	if [ "$status" -eq 0 ] || [ "$lines" -ne 1 ] || [ "$first" != "attnrt: " ]; then
		echo "FAIL: $1 exited $status with $lines line(s):"
		cat "$scratch/$1.out"
		exit 1
	fi
	echo "$1: $(cat "$scratch/$1.out")"
}
check probe_cmake "$scratch/build/attnrt_probe"

if command -v pkg-config >/dev/null 2>&1; then
	pc_cflags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags attnrt)
	pc_libs=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --libs attnrt)
	pc_libdir=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --variable=libdir attnrt)
	# shellcheck disable=SC2086 # word splitting of the flags is intended
	"$cc" $flags -std=c11 $pc_cflags "$example/attnrt_probe.c" -o "$scratch/probe_pc" \
		$pc_libs -Wl,-rpath,"$pc_libdir"
	check probe_pkgconfig "$scratch/probe_pc"
	if command -v ldd >/dev/null 2>&1 && ! ldd "$scratch/probe_pc" | grep -q 'libattnrt\.so'; then
		echo "FAIL: the pkg-config build did not link libattnrt.so"
		exit 1
	fi
fi
echo "rt_example_nogpu: all checks passed"
