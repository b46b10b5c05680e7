# bench/trace/patch.py SRC DST NAME D [OIDX]: a copy of an attnc kernel's PTX with
# %globaltimer stamps per CTA, written by thread 0 past the end of O, 128
# bytes per CTA in launch order (the caller allocates them: trace.c). The
# stamps: start; after the first and second cp.async.commit_group (Q's loads,
# then the first K/V tile; with a staged document table the ids come first and
# Q second, so analyze.py's "Q commit" is then the ids' commit); after the
# first two bar.sync 1 (a document table's words and entries); the loop head
# $L1 (first arrival); the end of the first tile ($L4); the loop exit ($L2);
# the end; plus %smid, the loop's trip count and %clock64 cycles from the
# end of the first tile to the exit. The label names are attnc's sm80
# emitter's (its stream loop is $L1 ... $L4 with exit $L2); a change there
# needs a change here. OIDX: O's tensor parameter (NAME_fwd_tOIDX; default 3,
# the fourth tensor; 4 for document1024, whose ids come fourth). Assumes
# contiguous O and 128-row CTAs.
import sys
src, dst, name, D = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
oparam = '%s_fwd_t%s' % (name, sys.argv[5] if len(sys.argv) > 5 else '3')
L = open(src).read().split('\n')
out = []; decl = False; l1 = False; ncommit = 0; nbar1 = 0
for line in L:
    s = line.strip()
    if not decl and s.startswith('.reg .f32'):
        out.append(line)
        out.append('\t.reg .u64 %tr<24>; .reg .u32 %trs<12>; .reg .pred %trp<3>;')
        out.append('\tmov.u64 %tr0, %globaltimer; mov.u64 %tr1, 0; mov.u64 %tr2, 0; mov.u64 %tr3, 0; mov.u64 %tr5, 0; mov.u64 %tr16, 0; mov.u64 %tr17, 0; mov.u64 %tr18, 0; mov.u64 %tr19, 0; mov.u64 %tr10, %clock64; setp.eq.u32 %trp0, 1, 1;')
        decl = True; continue
    if s == 'cp.async.commit_group;' and ncommit < 2 and not l1:
        out.append(line); out.append('\tmov.u64 %%tr%d, %%globaltimer;' % (16 + ncommit)); ncommit += 1; continue
    if s == 'bar.sync 1;' and nbar1 < 2 and not l1:
        out.append(line); out.append('\tmov.u64 %%tr%d, %%globaltimer;' % (18 + nbar1)); nbar1 += 1; continue
    if s == '$L1:' and not l1:
        out.append('\tmov.u64 %tr1, %globaltimer;'); out.append(line); l1 = True; continue
    if s == '$L4:':
        out.append(line)
        out.append('\t@%trp0 mov.u64 %tr2, %globaltimer; @%trp0 mov.u64 %tr10, %clock64; setp.eq.u32 %trp0, 1, 0; add.u64 %tr5, %tr5, 1;')
        continue
    if s == '$L2:':
        out.append(line)
        out.append('\tmov.u64 %tr3, %globaltimer; mov.u64 %tr11, %clock64;')
        continue
    if s == 'ret;':
        out += ['\tmov.u64 %tr4, %globaltimer; sub.u64 %tr11, %tr11, %tr10;', '\tbar.sync 0;',
                '\tmov.u32 %trs0, %tid.x; setp.eq.u32 %trp1, %trs0, 0;',
                '\tmov.u32 %trs1, %ctaid.x; mov.u32 %trs2, %ctaid.y;',
                '\tld.param.u64 %tr7, [' + oparam + ']; cvta.to.global.u64 %tr7, %tr7; ld.param.s64 %tr13, [' + name + '_fwd_d2];',
                # past O's end (nctaid.y rows of N x D): O + ny N D 2 + 128 (y nx + x)
                '\tmov.u32 %trs3, %nctaid.y; cvt.u64.u32 %tr14, %trs3; mul.lo.u64 %tr14, %tr14, %tr13;',
                '\tmul.lo.u64 %%tr14, %%tr14, %d; add.u64 %%tr7, %%tr7, %%tr14;' % (D * 2),
                '\tmov.u32 %trs4, %nctaid.x; mad.lo.u32 %trs4, %trs2, %trs4, %trs1; mul.wide.u32 %tr15, %trs4, 128; add.u64 %tr7, %tr7, %tr15;',
                '\tmov.u32 %trs5, %smid; cvt.u64.u32 %tr8, %trs5;',
                '\t@%trp1 st.global.v2.u64 [%tr7], {%tr0, %tr1};', '\t@%trp1 st.global.v2.u64 [%tr7+16], {%tr2, %tr3};',
                '\t@%trp1 st.global.v2.u64 [%tr7+32], {%tr4, %tr8};', '\t@%trp1 st.global.v2.u64 [%tr7+48], {%tr5, %tr11};', '\t@%trp1 st.global.v2.u64 [%tr7+64], {%tr16, %tr17};', '\t@%trp1 st.global.v2.u64 [%tr7+80], {%tr18, %tr19};']
    out.append(line)
assert decl and l1, 'no .reg .f32 or no $L1 in ' + src
open(dst, 'w').write('\n'.join(out))
