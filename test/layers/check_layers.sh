#!/bin/sh
# check_layers.sh SRCROOT: the layout's rules, checked on the tracked sources.
# Prints every breach and exits 1 if there is one:
#   - includes between top-level directories follow the layers:
#       support   includes nothing of the project
#       compiler  may include support
#       lang      may include support, compiler
#       lowering  may include support, compiler
#       cli       may include anything but runtime
#       runtime   includes nothing of the project, and nothing includes it
#   - a target directory (lowering/sm*/) is private: nothing outside it
#     includes its headers;
#   - lowering/gpu/ is GPU-generic: no file there names a target directory
#     (sm80, or sm_80);
#   - no source file is over 1,200 lines, and no target directory over
#     1,800 lines in all (the rest belongs in lowering/gpu/).
# Paths are resolved from the including file.
cd "$1" || exit 2
allowed() {
	case "$1:$2" in
	compiler:support | lang:support | lang:compiler | lowering:support | lowering:compiler) return 0 ;;
	cli:*) [ "$2" != runtime ] ;;
	*) return 1 ;;
	esac
}
files=$(git ls-files 'support/*' 'lang/*' 'compiler/*' 'lowering/*' 'runtime/*' 'cli/*' |
	grep -E '\.(c|h|y|l|def)$')
out=$(
	for f in $files; do
		grep -oE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+"' "$f" |
			sed 's/.*"\(.*\)"/\1/' | while read -r inc; do
			t=$(realpath -m --relative-to=. "$(dirname "$f")/$inc")
			[ -e "$t" ] || t=$inc
			[ -e "$t" ] || continue
			case $t in lowering/sm*/*)
				d=${t%/*}
				case $f in "$d"/*) ;; *) echo "$f -> $t (target-private)" ;; esac
				;;
			esac
			a=${f%%/*} b=${t%%/*}
			[ "$a" = "$b" ] || allowed "$a" "$b" || echo "$f -> $t (layers)"
		done
	done
	for d in lowering/sm*/; do
		t=$(basename "$d")
		[ -d lowering/gpu ] && git grep -n -i -E "$t|sm_${t#sm}" -- lowering/gpu |
			sed "s/\$/ (lowering\/gpu names the target $t)/"
	done
	for f in $files; do
		n=$(wc -l < "$f")
		[ "$n" -gt 1200 ] && echo "$f: $n lines (over 1,200)"
	done
	for d in lowering/sm*/; do
		[ -d "$d" ] || continue
		n=$(git ls-files "$d" | xargs cat | wc -l)
		[ "$n" -gt 1800 ] && echo "$d: $n lines in all (over 1,800)"
	done
)
[ -n "$out" ] && {
	echo "$out"
	exit 1
}
exit 0
