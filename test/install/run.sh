#!/bin/sh
# test/install/run.sh: the installed attnc as a user meets it. Installs this
# build into a fresh prefix; runs the installed attnc (--version, --explain,
# --emit=c) with no LD_LIBRARY_PATH; builds test/install's CMake project
# (find_package(attnrt) + attnc_add_kernel: causal.attn and full.attn in a
# C11 and a C++17 program) and its Makefile (pkg-config and the installed
# attnc), and runs them on the CPU; checks that a no-op rebuild runs no
# attnc, that touching one .attn file regenerates that file only and that
# a wrong -DATTNC is refused in one line. With ptxas, also gpu_probe (GPU
# interface + libattnrt), which must print the runtime's one line when no
# driver can be loaded. No GPU is needed.
#
# usage: run.sh CMAKE BUILD_DIR SOURCE_DIR SCRATCH CC CXX "FLAGS" [PTXAS]
set -eu
cmake=$1 build=$2 src=$3 scratch=$4 cc=$5 cxx=$6 flags=$7 ptxas=${8:-}
here=$src/test/install
prefix=$scratch/prefix
rm -rf "$scratch"
mkdir -p "$scratch/examples"
unset LD_LIBRARY_PATH
fail() {
	echo "FAIL: $*"
	exit 1
}
# quiet CMD...: runs CMD with its output in $scratch/log, shown on failure
quiet() {
	"$@" >"$scratch/log" 2>&1 || { cat "$scratch/log"; fail "$*"; }
}

quiet "$cmake" --install "$build" --prefix "$prefix"
attnc=$prefix/bin/attnc
for f in bin/attnc lib/cmake/attnrt/attnc_add_kernel.cmake lib/pkgconfig/attnrt.pc; do
	[ -e "$prefix/$f" ] || fail "$f not installed"
done
version=$("$attnc" --version) || fail "the installed attnc does not start"
case "$version" in attnc\ [0-9]*) ;; *) fail "attnc --version printed '$version'" ;; esac
echo "installed: $version"
quiet "$attnc" --explain "$src/examples/causal.attn"
quiet "$attnc" --target=cpu --emit=c "$src/examples/causal.attn" -o "$scratch/causal.c"
quiet "$cc" -std=c11 -w -c "$scratch/causal.c" -o "$scratch/causal.o"

# the .attn files are copied so that the dependency check can touch them
cp "$src/examples/causal.attn" "$src/examples/full.attn" "$scratch/examples/"
gpu=OFF
[ -n "$ptxas" ] && gpu=ON

# probe NAME PROGRAM: with no driver, one line "attnrt: ..." and exit 1
probe() {
	set +e
	ATTNRT_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$2" >"$scratch/$1.out" 2>&1
	status=$?
	set -e
	if [ "$status" -ne 1 ] || [ "$(wc -l <"$scratch/$1.out")" -ne 1 ] ||
		[ "$(head -c 8 "$scratch/$1.out")" != "attnrt: " ]; then
		cat "$scratch/$1.out"
		fail "$1 exited $status"
	fi
	echo "$1: $(cat "$scratch/$1.out")"
}
# pass NAME PROGRAM: the program checks its kernels and prints PASS last
pass() {
	if ! "$2" >"$scratch/$1.out" 2>&1 || [ "$(tail -n 1 "$scratch/$1.out")" != PASS ]; then
		cat "$scratch/$1.out"
		fail "$1"
	fi
	echo "$1: $(head -n 2 "$scratch/$1.out" | tr '\n' ' ')"
}

# CMake: find_package(attnrt) + attnc_add_kernel, attnc found beside the package
out=$scratch/cmake
quiet "$cmake" -S "$here" -B "$out" -DCMAKE_PREFIX_PATH="$prefix" \
	-DATTN_EXAMPLES="$scratch/examples" -DATTN_TEST_GPU=$gpu -DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_FLAGS="$flags" \
	-DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags"
quiet "$cmake" --build "$out"
grep -q "attnc --target=cpu full.attn (two_kernels_cxx)" "$scratch/log" ||
	fail "the build did not run attnc"
pass cmake_c "$out/two_kernels_c"
pass cmake_cxx "$out/two_kernels_cxx"
[ $gpu = OFF ] || probe cmake_gpu_probe "$out/gpu_probe"
[ $gpu = OFF ] || probe cmake_gpu_probe_bundle "$out/gpu_probe_bundle"
quiet "$cmake" --build "$out"
! grep -q "attnc --target" "$scratch/log" || fail "a no-op rebuild ran attnc"
sleep 1 # a newer time stamp on file systems with whole seconds
touch "$scratch/examples/full.attn"
quiet "$cmake" --build "$out"
grep -q "attnc --target=cpu full.attn" "$scratch/log" || fail "touching full.attn rebuilt nothing"
! grep -q "causal.attn" "$scratch/log" || fail "touching full.attn regenerated causal.attn"
echo "cmake: attnc reruns when its .attn file changes, and only then"

# -DATTNC overrides the attnc beside the package; a wrong one is one clear error
if "$cmake" -S "$here" -B "$scratch/cmake-attnc" -DCMAKE_PREFIX_PATH="$prefix" \
	-DATTN_EXAMPLES="$scratch/examples" -DATTNC=/nonexistent/attnc >"$scratch/log" 2>&1 ||
	! grep -q "attnc_add_kernel: attnc not found (looked for '/nonexistent/attnc')" "$scratch/log"; then
	cat "$scratch/log"
	fail "-DATTNC=/nonexistent/attnc was not refused clearly"
fi

# make + pkg-config, as docs/cli.md shows
if command -v pkg-config >/dev/null 2>&1 && command -v make >/dev/null 2>&1; then
	omp=-fopenmp
	echo 'int main(void) { return 0; }' >"$scratch/omp.c"
	"$cc" -fopenmp "$scratch/omp.c" -o "$scratch/omp" 2>/dev/null || omp=
	mkdir -p "$scratch/make"
	make_gpu=
	[ $gpu = OFF ] || make_gpu=1
	quiet make -C "$scratch/make" -f "$here/Makefile" VPATH="$here" PREFIX="$prefix" \
		EXAMPLES="$scratch/examples" GPU=$make_gpu CC="$cc" CFLAGS="-O2 $flags" OPENMP="$omp"
	pass make_c "$scratch/make/two_kernels"
	if [ $gpu = ON ]; then
		probe make_gpu_probe "$scratch/make/gpu_probe"
		ldd "$scratch/make/gpu_probe" | grep -q "$prefix/lib.*libattnrt\.so" ||
			fail "gpu_probe does not load libattnrt.so from the prefix (rpath)"
	fi
else
	echo "make or pkg-config missing: the Makefile recipe is not checked"
fi
echo "install: all checks passed"
