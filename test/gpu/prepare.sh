#!/bin/sh
# Runs here (where attnc, flex, bison and MLIR live): generates, for every
# example the sm_80 path supports, its GPU interface (PTX, cubins for sm_80
# and sm_90, x.h, x.c) and its portable C reference, into DIR (default
# .carry/gpu), with the harness and the case list the device script reads.
set -eu
cd "$(dirname "$0")/../.."
ATTNC=${ATTNC:-build/bin/attnc}
# TARGET=sm_90a: the same cases on the sm_90a kernels
TARGET=${TARGET:-sm_80}
# PARTS=1 (default): every kernel also gets its entry of partial states
# (attnc --parts), which the harness checks split and chained too
PARTS=${PARTS:-1}
parts_opt=""
[ "$PARTS" = 1 ] && parts_opt="--parts"
DIR=${1:-.carry/gpu}
rm -rf "$DIR" && mkdir -p "$DIR/gen"
: > "$DIR/cases.txt"
# GRAD=1: the backward (attnc --grad) of every example that compiles it
# for the GPU target, checked by grad_harness.c against the C backward;
# the others print the diagnostic that refuses them
GRAD=${GRAD:-0}
# ONLY=REGEX: only the plan's examples (first words) that match it
ONLY=${ONLY:-}
only() {
	[ -z "$ONLY" ] || { grep -E "^($ONLY) " "$DIR/plan.txt" > "$DIR/plan.only" || :; mv "$DIR/plan.only" "$DIR/plan.txt"; }
}
if [ "$GRAD" = 1 ]; then
	cat > "$DIR/plan.txt" <<'CASES'
full full B=2,H=3,N=200,M=333 B=1,H=2,N=1,M=77 B=2,H=2,N=64,M=64 B=1,H=2,N=300,M=900,ramp=4
causal causal B=2,H=4,N=257 B=1,H=1,N=1 B=3,H=2,N=64 B=2,H=2,N=600,ramp=4
sliding_window sliding_window B=2,H=2,N=700 B=1,H=1,N=33
alibi alibi B=2,H=4,N=190 B=1,H=2,N=1 B=1,H=2,N=500,ramp=4
softcap softcap B=2,H=2,N=150 B=1,H=1,N=1 B=1,H=2,N=500,ramp=4
prefix_lm prefix_lm B=3,H=2,N=160 B=2,H=1,N=1 B=1,H=2,N=400 --int prefix_len=0:160
document document B=2,H=2,N=180 B=1,H=1,N=1 B=1,H=2,N=700 --int doc=0:40:150
causal_d64 causal B=2,H=4,N=257 B=1,H=1,N=1 B=2,H=2,N=600
full_d64 full B=2,H=3,N=200,M=333 B=1,H=2,N=300,M=900
full_d96 full B=2,H=3,N=200,M=333 B=1,H=2,N=300,M=900,ramp=4
causal_d32 causal B=2,H=4,N=257 B=1,H=1,N=1 B=2,H=2,N=600,ramp=4
causal_strict causal B=2,H=2,N=130 B=1,H=1,N=1 B=1,H=2,N=300
gqa gqa B=2,HKV=2,G=4,N=130,M=190 B=1,HKV=3,G=1,N=65,M=65 B=1,HKV=1,G=8,N=100,M=300 B=1,HKV=2,G=4,N=200,M=700,ramp=4
mqa mqa B=2,H=4,N=150 B=1,H=1,N=1 B=1,H=8,N=300,ramp=4
sink gpt_oss_sink B=2,H=3,N=140 B=1,H=1,N=1 B=1,H=2,N=500,ramp=4
sink_strict gpt_oss_sink B=2,H=2,N=130 B=1,H=1,N=1
sigmoid sigmoid_attn B=2,H=3,N=150 B=1,H=1,N=1 B=1,H=2,N=300
diff diff_attn B=2,H=2,N=120 B=1,H=1,N=1 B=1,H=2,N=300,ramp=4
mla mla B=2,H=2,N=140 B=1,H=1,N=1 B=1,H=2,N=400,ramp=4
decode decode B=2,HKV=2,G=4,M=300 --int kv_len=0:300
relpos_bias relpos_bias B=2,H=3,N=100,M=170
softcap_alibi softcap_alibi B=2,H=2,N=150
longformer longformer B=2,H=2,N=700 B=1,H=1,N=33 B=2,H=2,N=300,ramp=8
threshold threshold B=2,H=2,N=300 B=1,H=1,N=1 B=2,H=3,N=190
t5_bias t5_bias B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1 B=1,H=2,N=150,M=700,ramp=8
multi gqa_groups B=2,HKV=2,G=4,N=130 B=1,HKV=3,G=1,N=65
neighborhood2d neighborhood2d B=2,H=2,IH=13,IW=11 B=1,H=1,IH=7,IW=7 B=1,H=2,IH=40,IW=33
neighborhood3d neighborhood3d B=1,H=2,T=4,IH=9,IW=10 B=1,H=1,T=2,IH=8,IW=8
gaussian gaussian B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1 B=1,H=2,N=300,M=700,ramp=4
cosine cosine B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1 B=1,H=2,N=300,M=700,ramp=4
cosine_lse cosine_lse B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1 B=1,H=2,N=300,M=700,ramp=4
varlen varlen B=5,T=300,TK=520,HKV=2,G=2,NQ=130,NK=200 B=1,T=1,TK=1,HKV=1,G=1,NQ=1,NK=1 B=3,T=700,TK=700,HKV=2,G=4,NQ=400,NK=400,ramp=4 B=4,T=40,TK=3000,HKV=2,G=4,NQ=16,NK=1000 --int cu_q=cum:T:NQ --int cu_k=cum:TK:NK
varlen_decode varlen_decode B=5,TK=900,HKV=2,G=4,NK=400 B=1,TK=1,HKV=1,G=1,NK=1 --int cu_k=cum:TK:NK
linear linear_attn B=2,H=2,N=150 B=1,H=1,N=1 B=1,H=2,N=500,ramp=4
CASES
	only
	echo grad > "$DIR/mode.txt"
	mkdir -p "$DIR/src"
	while read -r file casc rest; do
		src="examples/$file.attn"
		case "$file" in
		*_d32 | *_d64 | *_d96)
			# head dim 64: dK and dV in one kernel (lowering: grad_split.c);
			# 32 and 96: sm_90a's last panel half filled (TMA's zeros)
			src="$DIR/src/$file.attn"
			sed -e "s/dims D = 128;/dims D = ${file##*_d};/" "examples/${file%_d*}.attn" > "$src"
			;;
		causal_strict)
			# j < i: row 0 has no key (L = -inf; its gradients and what it
			# adds to dK and dV are 0), and every row at N = 1
			src="$DIR/src/$file.attn"
			sed -e 's/where j <= i;/where j < i;/' examples/causal.attn > "$src"
			;;
		cosine_lse)
			# the logsumexp saved: no first pass (test/lit/grad/Inputs)
			src=test/lit/grad/Inputs/cosine_lse.attn
			;;
		sink_strict)
			# j < i: row 0 sees only the sink (O = 0; its share of dsink
			# is -exp(sink - Smax) dO . O = 0), every row at N = 1
			src="$DIR/src/$file.attn"
			sed -e 's/where j <= i;/where j < i;/' examples/sink.attn > "$src"
			;;
		esac
		if ! "$ATTNC" --grad --target="$TARGET" "$src" -o "$DIR/gen/$file" 2> "$DIR/gen/$file.err"; then
			echo "skip $file: $(head -1 "$DIR/gen/$file.err")"
			continue
		fi
		"$ATTNC" --grad --target=cpu --emit=c "$src" -o "$DIR/gen/${file}_cpu.c"
		ints=""
		for s in $rest; do
			case "$s" in *:*) ints="$ints --int $s" ;; esac
		done
		for s in $rest; do
			case "$s" in --int | *:*) ;; *) echo "$file $casc $s$ints" >> "$DIR/cases.txt" ;; esac
		done
	done < "$DIR/plan.txt"
	cp test/gpu/grad_harness.c test/gpu/harness.c test/gpu/gpu_testutil.h test/gpu/device.sh "$DIR/"
	cp -r runtime "$DIR/runtime"
	echo "$TARGET" > "$DIR/target.txt"
	echo "prepared $(wc -l < "$DIR/cases.txt") backward $TARGET cases in $DIR"
	exit 0
fi
# example (NAME_d64, _d32, _d96: the same with that head dim, O only; NAME_o: O only)  cascade  shape sets (ragged,
# N_q != N_kv, N = 1, GQA group 1/4/8; paramK=V sets the K-th param: a negative or
# zero softmax scale, which the kernels fold into the row max and the exponent;
# name=V fills the input `name` with V: lam = 0.9995 makes differential
# attention's O = (1 - lam) V at N = 1, which P rounded to bf16 with lam lost;
# ramp=R: scores that grow along the keys, so that running maxes move)  [int ranges;
# lo:hi:run gives runs of equal ids, packed documents; N > 8192 crosses the
# tile table's window; N = 181 and 4001: ragged rows whose later batches start off 16 bytes;
# perm:DIM gives distinct values of 0 to DIM - 1, a page table whose pages are scattered
# over the pool and shared by no two sequences]
cat > "$DIR/plan.txt" <<'CASES'
full full B=2,H=3,N=200,M=333 B=1,H=2,N=1,M=77 B=2,H=2,N=64,M=64 B=1,H=2,N=300,M=900,ramp=8 B=2,H=3,N=200,M=333,param0=-0.09 B=1,H=2,N=130,M=250,param0=0
causal causal B=2,H=4,N=257 B=1,H=1,N=1 B=3,H=2,N=64 B=2,H=2,N=600,ramp=8
gqa gqa B=2,HKV=2,G=4,N=130,M=190 B=1,HKV=3,G=1,N=65,M=65 B=1,HKV=1,G=8,N=100,M=300 B=1,HKV=2,G=4,N=200,M=700,ramp=8
mqa mqa B=2,H=4,N=150 B=1,H=3,N=1
sliding_window sliding_window B=2,H=2,N=700 B=1,H=1,N=33
longformer longformer B=2,H=2,N=700,param1=64,param2=20 B=1,H=1,N=33 B=1,H=2,N=1000,param1=100,param2=0 B=2,H=2,N=300,ramp=8
threshold threshold B=2,H=2,N=300 B=1,H=1,N=1 B=1,H=2,N=700,ramp=8 B=2,H=3,N=190,param1=0.01 B=1,H=2,N=130,param1=2.0
alibi alibi B=2,H=4,N=190 B=1,H=2,N=1 B=1,H=2,N=500,ramp=6
softcap softcap B=2,H=2,N=150 B=1,H=1,N=1 B=1,H=2,N=500,ramp=6
softcap_alibi softcap_alibi B=2,H=2,N=150 B=1,H=1,N=1 B=1,H=2,N=500,ramp=6
prefix_lm prefix_lm B=3,H=2,N=160 B=2,H=1,N=1 B=1,H=2,N=400,ramp=8 --int prefix_len=0:160
document document B=2,H=2,N=180 B=1,H=1,N=1 --int doc=0:3
relpos_bias relpos_bias B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1
cosine cosine B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1 B=1,H=2,N=300,M=700,ramp=8 B=2,H=2,N=129,M=64
linear linear_attn B=2,H=3,N=200 B=1,H=1,N=1 B=1,H=2,N=700 B=2,H=2,N=129
gaussian gaussian B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1 B=1,H=2,N=300,M=700,ramp=4 B=2,H=2,N=129,M=64,param0=0.5
t5_bias t5_bias B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1 B=1,H=2,N=150,M=700,ramp=8 B=1,H=2,N=300,M=300,param0=1.0
t5_onehot t5_bias B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1 B=1,H=2,N=150,M=700,ramp=8
onehot onehot B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1 B=1,H=2,N=150,M=700,ramp=8
sink gpt_oss_sink B=2,H=3,N=140 B=1,H=1,N=1
sigmoid sigmoid_attn B=2,H=3,N=150 B=1,H=1,N=1
diff diff_attn B=2,H=2,N=120 B=1,H=1,N=1 B=1,H=2,N=1,lam=0.9995 B=1,H=2,N=40,lam=0.9995
mla mla B=2,H=2,N=140 B=1,H=1,N=1 B=1,H=2,N=700,ramp=4
mla_wide mla B=2,H=2,N=140 B=1,H=1,N=1 B=1,H=2,N=300,ramp=4 B=1,H=2,N=65,param0=-0.2
mla_absorbed mla_absorbed B=2,H=16,M=300 B=1,H=1,M=1 B=3,H=128,M=700,ramp=8 B=1,H=70,M=2100 B=2,H=16,M=64,param0=-0.1 --int kv_len=0:2100
decode decode B=2,HKV=2,G=4,M=300 B=1,HKV=2,G=8,M=900,ramp=8 B=1,HKV=3,G=8,M=1 B=3,HKV=1,G=1,M=70 B=1,HKV=2,G=80,M=130 --int kv_len=0:300
multi gqa_groups B=2,HKV=2,G=4,N=130 B=1,HKV=1,G=8,N=1 B=1,HKV=3,G=1,N=65
full_d64 full B=2,H=3,N=200,M=333 B=1,H=2,N=300,M=900,ramp=8
causal_d64 causal B=2,H=4,N=257 B=1,H=1,N=1 B=2,H=2,N=600,ramp=8 B=2,H=2,N=300,param0=-0.2 B=1,H=2,N=200,param0=0
sliding_window_d64 sliding_window B=2,H=2,N=700 B=1,H=1,N=33
alibi_d64 alibi B=2,H=4,N=190 B=1,H=2,N=500,ramp=6
full_d96 full B=2,H=3,N=200,M=333 B=1,H=2,N=1,M=77 B=1,H=2,N=300,M=900,ramp=8 B=2,H=3,N=200,M=333,param0=-0.09
causal_d32 causal B=2,H=4,N=257 B=1,H=1,N=1 B=2,H=2,N=600,ramp=8 B=2,H=2,N=300,param0=-0.2
gqa_d96 gqa B=2,HKV=2,G=4,N=130,M=190 B=1,HKV=1,G=8,N=100,M=300 B=1,HKV=2,G=4,N=200,M=700,ramp=8
sliding_window_d32 sliding_window B=2,H=2,N=700 B=1,H=1,N=33
alibi_d96 alibi B=2,H=4,N=190 B=1,H=2,N=500,ramp=6
cosine_d96 cosine B=2,H=3,N=100,M=170 B=1,H=1,N=1,M=1 B=1,H=2,N=300,M=700,ramp=8
decode_d96 decode B=2,HKV=2,G=4,M=300 B=1,HKV=2,G=8,M=900,ramp=8 B=1,HKV=3,G=8,M=1 B=3,HKV=1,G=1,M=70 --int kv_len=0:300
varlen_decode_d32 varlen_decode B=5,TK=900,HKV=2,G=4,NK=400 B=1,TK=1,HKV=1,G=1,NK=1 B=3,TK=20000,HKV=2,G=8,NK=9000,ramp=8 --int cu_k=cum:TK:NK
prefix_lm_d64 prefix_lm B=3,H=2,N=160 B=1,H=2,N=400,ramp=8 --int prefix_len=0:160
document_d64 document B=2,H=2,N=180 B=1,H=1,N=300 B=1,H=1,N=9000 B=3,H=1,N=4001 --int doc=0:40:700
document_o document B=2,H=2,N=180 B=1,H=1,N=300 B=1,H=1,N=9000 B=2,H=2,N=180,param0=-0.1 B=3,H=2,N=181 --int doc=0:40:1500
full_o full B=2,H=3,N=200,M=333,param0=-0.09 B=1,H=2,N=300,M=900,ramp=8 B=1,H=2,N=70,M=130,param0=0
alibi_o alibi B=2,H=4,N=190 B=1,H=2,N=500,ramp=6 B=1,H=2,N=3000 B=2,H=2,N=300,param0=-0.1
selfattn selfattn B=2,H=3,N=200 B=1,H=1,N=1 B=1,H=2,N=300,ramp=8
mathfns sigmoid_attn B=2,H=3,N=150 B=1,H=1,N=1 B=1,H=2,N=300,ramp=4
neighborhood2d neighborhood2d B=2,H=2,IH=13,IW=11 B=1,H=1,IH=7,IW=7 B=1,H=2,IH=40,IW=33 B=1,H=1,IH=5,IW=9 B=1,H=2,IH=64,IW=64
neighborhood3d neighborhood3d B=1,H=2,T=4,IH=9,IW=10 B=1,H=1,T=3,IH=7,IW=7 B=1,H=1,T=2,IH=8,IW=8 B=1,H=2,T=5,IH=16,IW=16
paged_decode paged_decode B=3,HKV=2,G=4,NP=80,P=16,MAXP=20 B=2,HKV=2,G=8,NP=20,P=64,MAXP=5 B=2,HKV=1,G=8,NP=100,P=7,MAXP=45 B=2,HKV=2,G=4,NP=700,P=1,MAXP=300 B=3,HKV=3,G=1,NP=10,P=128,MAXP=3 B=1,HKV=2,G=8,NP=40,P=32,MAXP=30,ramp=8 --int block=perm:NP --int kv_len=0:300
decode_long decode B=16,HKV=2,G=4,M=5000 B=3,HKV=3,G=8,M=9000,ramp=8 B=40,HKV=2,G=1,M=300 B=2,HKV=1,G=80,M=700 --int kv_len=0:9000
decode_equal decode B=8,HKV=2,G=4,M=1000 B=100,HKV=3,G=4,M=1000 B=67,HKV=2,G=8,M=1000 B=7,HKV=1,G=1,M=1000 B=1,HKV=1,G=4,M=1000 --int kv_len=900:900
paged_decode_long paged_decode B=2,HKV=2,G=4,NP=1200,P=16,MAXP=570 B=1,HKV=1,G=8,NP=200,P=64,MAXP=150 B=2,HKV=2,G=4,NP=1000,P=24,MAXP=400 --int block=perm:NP --int kv_len=3000:9000
paged_decode_hnd paged_decode_hnd B=3,HKV=2,G=4,NP=80,P=16,MAXP=20 B=2,HKV=2,G=8,NP=20,P=64,MAXP=5 B=2,HKV=1,G=8,NP=100,P=7,MAXP=45 B=2,HKV=2,G=4,NP=120,P=8,MAXP=50 B=3,HKV=3,G=1,NP=10,P=128,MAXP=3 B=1,HKV=2,G=8,NP=40,P=32,MAXP=30,ramp=8 --int block=perm:NP --int kv_len=0:300
paged_decode_hnd_long paged_decode_hnd B=2,HKV=2,G=4,NP=1200,P=16,MAXP=570 B=1,HKV=1,G=8,NP=200,P=64,MAXP=150 B=2,HKV=2,G=4,NP=2400,P=8,MAXP=1130 B=2,HKV=2,G=4,NP=1000,P=24,MAXP=400 --int block=perm:NP --int kv_len=3000:9000
paged_prefill paged_prefill B=2,HKV=2,G=2,N=100,NP=50,P=16,MAXP=20 B=2,HKV=1,G=1,N=300,NP=12,P=64,MAXP=5 B=1,HKV=2,G=4,N=1,NP=30,P=16,MAXP=20 B=3,HKV=1,G=2,N=70,NP=200,P=7,MAXP=45 B=1,HKV=2,G=2,N=200,NP=20,P=32,MAXP=10,ramp=8 --int block=perm:NP --int kv_len=0:300
gather_q gather_q B=2,H=3,N=200 B=1,H=2,N=64 B=2,H=1,N=130 B=4,H=16,N=2100 --int perm=0:63
gather_q_d128 gather_q B=2,H=3,N=200 B=1,H=2,N=64 B=4,H=16,N=2100 --int perm=0:63
gather_q_d96 gather_q B=2,H=3,N=200 B=2,H=1,N=130 --int perm=0:63
paged_prefill_d64 paged_prefill B=2,HKV=2,G=2,N=100,NP=50,P=16,MAXP=20 B=1,HKV=1,G=4,N=250,NP=10,P=64,MAXP=5 --int block=perm:NP --int kv_len=0:300
tc_not causal B=2,H=3,N=200 B=3,H=2,N=190 B=1,H=1,N=1
tc_mix causal B=2,H=3,N=200 B=3,H=2,N=190 B=1,H=1,N=1
keypad full B=2,H=3,N=200,M=333 B=1,H=2,N=300,M=9000 B=1,H=1,N=1,M=77 B=2,H=1,N=70,M=4200 --int valid=0:2:150
keypad_r full B=2,H=3,N=200,M=333 B=1,H=2,N=130,M=5000 --int valid=0:2
headnorm qscale B=2,H=3,N=200 B=1,H=1,N=1 B=1,H=2,N=700,ramp=4
varlen_decode varlen_decode B=5,TK=900,HKV=2,G=4,NK=400 B=1,TK=1,HKV=1,G=1,NK=1 B=3,TK=20000,HKV=2,G=8,NK=9000,ramp=8 B=9,TK=300,HKV=1,G=4,NK=100 --int cu_k=cum:TK:NK
varlen varlen B=5,T=300,TK=520,HKV=2,G=2,NQ=130,NK=200 B=1,T=1,TK=1,HKV=1,G=1,NQ=1,NK=1 B=3,T=700,TK=700,HKV=2,G=4,NQ=400,NK=400,ramp=4 B=7,T=90,TK=1500,HKV=1,G=8,NQ=40,NK=600 B=9,T=1000,TK=300,HKV=2,G=1,NQ=300,NK=100 B=4,T=40,TK=14000,HKV=2,G=4,NQ=16,NK=5000 --int cu_q=cum:T:NQ --int cu_k=cum:TK:NK
CASES
only
# tc_NAME: causal.attn with another mask, for the less common cases of the
# tile-class rule (compiler/intervals.c): a negation, floor division and
# products of indices, min and max, modulo, == (every row keeps its diagonal)
tc_mask() {
	case "$1" in
	tc_not) echo '!(j > i) \&\& j >= (i / 3) * 2 - h * 2 - 8' ;;
	tc_mix) echo 'j == i || max(j, b * 4) <= min(i, N - 3) \&\& (j % 7 != 3 || j * 2 <= i + (b + 1) * (h + 1))' ;;
	esac
}
mkdir -p "$DIR/src"
while read -r file casc rest; do
	# NAME_d64 (_d32, _d96): examples/NAME.attn with that head dim and O only (no L, whose
	# registers would send it back to 64-key tiles): the 128-key kernels
	src="examples/$file.attn"
	file_parts=$parts_opt
	case "$file" in
	*_o)
		# NAME_o: O only (document's 128-row kernel, kept with its spills;
		# ALiBi's bias at one row per thread, lowering/gpu/shift.c)
		src="$DIR/src/$file.attn"
		sed -e '/^  out L\[/d' -e '/^  L\[b, h, i\]/d' "examples/${file%_o}.attn" > "$src"
		;;
	mathfns)
		# sigmoid.attn with every math function of the language on the
		# scores (their PTX sequences: floor/ceil/round conversions, log1p,
		# expm1 and erf approximations, sign, elu, softplus, clamp)
		src="$DIR/src/$file.attn"
		sed -e 's#sigmoid(S\[b, h, i, j\] + b0)#sigmoid(softplus(S[b, h, i, j]) * 0.5 + elu(S[b, h, i, j]) * 0.25 + erf(S[b, h, i, j]) * 0.5 + log1p(abs(S[b, h, i, j])) * 0.25 + expm1(-abs(S[b, h, i, j])) * 0.25 + sign(S[b, h, i, j]) * 0.125 + (floor(S[b, h, i, j] * 4.0) + ceil(S[b, h, i, j] * 4.0) + round(S[b, h, i, j] * 4.0)) * 0.0625 + clamp(S[b, h, i, j], -1.0, 1.0) + b0)#' \
			examples/sigmoid.attn > "$src"
		;;
	headnorm)
		# a norm of Q per head over every row and column: a row pass that
		# sums over two indices (test/lit/ptx/Inputs/prologue_two.attn)
		src=test/lit/ptx/Inputs/prologue_two.attn
		;;
	selfattn)
		# causal.attn without its mask: full attention over one sequence,
		# which has a context-parallel launch (ring.sh)
		src="$DIR/src/$file.attn"
		sed -e 's# where j <= i;#;#' -e 's/^attention causal /attention selfattn /' \
			examples/causal.attn > "$src"
		;;
	mla_wide)
		# mla.attn with V 512 wide: its own tiles, its columns in two slices
		src="$DIR/src/$file.attn"
		sed -e 's/DV = 128;/DV = 512;/' examples/mla.attn > "$src"
		;;
	t5_onehot)
		# t5_bias.attn with its table read by a sum over the buckets with one
		# term (compiler/onehot.c, R6: the read at the bucket)
		src="$DIR/src/$file.attn"
		sed -e 's/^  S\[b, h, i, j\] = \(.*\) + bucket_bias\[h, bucket\[i, j\]\];$/  bias[h, i, j] = sum[k](bucket_bias[h, k] where k == bucket[i, j]);\n  S[b, h, i, j] = \1 + bias[h, i, j];/' \
			examples/t5_bias.attn > "$src"
		;;
	onehot)
		# the lit test's input: buckets out of range and a second conjunct
		src=test/lit/compiler/Inputs/onehot.attn
		;;
	gather_q)
		# Q's rows read through a gather (the lit test's input)
		src=test/lit/ptx/Inputs/gather_q.attn
		;;
	gather_q_d*)
		# the same at another head dim
		src="$DIR/src/$file.attn"
		sed -e "s/dims D = 64;/dims D = ${file##*_d};/" test/lit/ptx/Inputs/gather_q.attn > "$src"
		;;
	*_long)
		# the same example over longer sequences: split-KV over many tiles
		src="examples/${file%_long}.attn"
		;;
	*_equal)
		# the same example, every sequence as long: stream-K's shares then
		# lie in one row each (rows fewer than the CTAs, or k whole rows)
		src="examples/${file%_equal}.attn"
		;;
	keypad*)
		# full.attn with a key-padding mask, data read along the keys alone:
		# runs of valid and padded keys (empty, full and partial tiles over
		# several scan windows), or each key valid at random (every tile
		# partial)
		src="$DIR/src/$file.attn"
		sed -e 's#^  in  V\[B, H, M, D\] : bf16;#&\n  in  valid[B, M]   : i32;#' \
			-e 's#K\[b, h, j, d\]);#K[b, h, j, d]) where valid[b, j] != 0;#' examples/full.attn > "$src"
		;;
	tc_*)
		src="$DIR/src/$file.attn"
		sed -e "s#where j <= i;#where $(tc_mask "$file");#" examples/causal.attn > "$src"
		;;
	*_d32 | *_d64 | *_d96)
		src="$DIR/src/$file.attn"
		sed -e "s/dims D = 128;/dims D = ${file##*_d};/" -e '/^  out L\[/d' -e '/^  L\[b, h, i\]/d' \
			"examples/${file%_d*}.attn" > "$src"
		;;
	esac
	if ! "$ATTNC" --target="$TARGET" $file_parts "$src" -o "$DIR/gen/$file" 2> "$DIR/gen/$file.err"; then
		echo "skip $file: $(head -1 "$DIR/gen/$file.err")"
		continue
	fi
	"$ATTNC" --target=cpu --emit=c "$src" -o "$DIR/gen/${file}_cpu.c"
	ints=""
	for s in $rest; do
		case "$s" in
		--int) ;;
		*:*) ints="$ints --int $s" ;;
		esac
	done
	for s in $rest; do
		case "$s" in
		--int | *:*) ;;
		*) echo "$file $casc $s$ints" >> "$DIR/cases.txt" ;;
		esac
	done
done < "$DIR/plan.txt"
cp test/gpu/harness.c test/gpu/gpu_testutil.h test/gpu/device.sh test/gpu/ring.c test/gpu/ring.sh "$DIR/"
cp -r runtime "$DIR/runtime"
echo "$TARGET" > "$DIR/target.txt"
echo "prepared $(wc -l < "$DIR/cases.txt") $TARGET cases in $DIR"
