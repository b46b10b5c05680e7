# bench/trace/mkgen.py SRC.c CUBIN DST.c: a copy of a generated interface (gen/NAME.c) whose embedded sm90 cubin is CUBIN (a patched kernel, assembled by ptxas -arch=sm_90).
import sys, re
src, cub, dst = sys.argv[1:4]
data = open(cub, 'rb').read()
L = open(src).read().split('\n')
out = []; i = 0
while i < len(L):
    m = re.match(r'static const unsigned char attn_sm90\[(\d+)\]', L[i])
    if m:
        out.append('static const unsigned char attn_sm90[%d] __attribute__((aligned(16))) = {' % len(data))
        for k in range(0, len(data), 24):
            out.append(', '.join(str(b) for b in data[k:k+24]) + ',')
        out.append('};')
        i += 1
        while not L[i].startswith('};'): i += 1
        i += 1; continue
    out.append(L[i]); i += 1
open(dst, 'w').write('\n'.join(out))
