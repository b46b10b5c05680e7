# T5's relative-position buckets (Hugging Face's _relative_position_bucket,
# bidirectional, 32 buckets, max_distance 128), for r = -(N-1) .. N-1, in
# the format of npy.py print.
import math
import sys


def bucket(rp, num_buckets=32, max_distance=128):
    num_buckets //= 2
    ret = num_buckets if rp > 0 else 0
    n = abs(rp)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    large = max_exact + int(
        math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact))
    return ret + min(large, num_buckets - 1)


n = int(sys.argv[1])
print("bkt = " + " ".join(str(bucket(r)) for r in range(-(n - 1), n)))
