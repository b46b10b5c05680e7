/*
** test/install/two_kernels.cpp: two_kernels.c as a C++17 program: the
** generated headers' extern "C" blocks let it call the C objects attnc
** generated (examples/causal.attn and examples/full.attn, --target=cpu).
*/
#include <cstdio>
#include <vector>

#include "cpu/causal.h"
#include "cpu/full.h"
#include "reference.h"

namespace
{

constexpr long B = 2, H = 1, N = 33, M = 90, D = 128;

// One kernel's verdict: its return code and its deviation from reference.h.
bool passes(const char *name, int rc, double dev)
{
	std::printf("%s: rc %d, max deviation from the reference %.3g\n", name, rc, dev);
	return rc == 0 && dev < 1e-4;
}

} // namespace

int main()
{
	std::vector<float> q(B * H * N * D), k(B * H * M * D), v(B * H * M * D);
	std::vector<float> o(B * H * N * D), l(B * H * N);
	unsigned seed = 11;
	ref_fill(q.data(), q.size(), &seed);
	ref_fill(k.data(), k.size(), &seed);
	ref_fill(v.data(), v.size(), &seed);

	full_args f{};
	f.Q = q.data(), f.K = k.data(), f.V = v.data(), f.O = o.data(), f.L = l.data();
	f.B = B, f.H = H, f.N = N, f.M = M, f.D = D;
	full_defaults(&f);
	int rc = full_run(&f, 1); // before the check: argument order is unspecified
	bool ok =
	    passes("full", rc, ref_deviation(f.Q, f.K, f.V, f.O, f.L, B, H, N, M, D, f.scale, 0));

	causal_args c{};
	c.Q = q.data(), c.K = k.data(), c.V = v.data(), c.O = o.data(), c.L = l.data();
	c.B = B, c.H = H, c.N = N, c.D = D;
	causal_defaults(&c);
	rc = causal_run(&c, 1);
	ok = passes("causal", rc,
		    ref_deviation(c.Q, c.K, c.V, c.O, c.L, B, H, N, N, D, c.scale, 1)) &&
	     ok;

	std::puts(ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
