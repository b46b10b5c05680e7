# growth.py LIMIT_MB SMALL BIG CMD...: runs CMD SMALL, then CMD BIG (output
# thrown away), prints how much more memory (peak resident set) the big
# input took, and fails when either run fails or the growth passes LIMIT_MB.
import resource, subprocess, sys

limit, small, big, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
peak = []
for f in (small, big):
    rc = subprocess.call(cmd + [f], stdout=subprocess.DEVNULL)
    if rc:
        sys.exit("exit status %d on %s" % (rc, f))
    # the largest child so far: the big input's, once it has run
    peak.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
grew = (peak[1] - peak[0]) // 1024
print("peak %d MB, %d MB more than one block" % (peak[1] // 1024, grew))
sys.exit(1 if grew > limit else 0)
