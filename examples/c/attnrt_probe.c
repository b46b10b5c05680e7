/*
** examples/c/attnrt_probe.c: the smallest program on libattnrt. It starts the
** runtime and says which GPU it would use; without a usable CUDA driver or
** GPU it prints the runtime's one-line reason and exits 1. Built by default
** and by ctest's rt_example_nogpu (ATTN_EXAMPLE_GPU=OFF).
*/
#include <stdio.h>

#include <attnrt.h>

/* attnrt_init, then one line either way. */
int main(void)
{
	int n = 0, dev = 0, sm = 0, version = 0;
	if (attnrt_init() != ATTNRT_OK || attnrt_device_count(&n) != ATTNRT_OK ||
	    attnrt_current_device(&dev, &sm) != ATTNRT_OK ||
	    attnrt_driver_version(&version) != ATTNRT_OK) {
		fprintf(stderr, "%s\n", attnrt_last_error());
		return 1;
	}
	printf("attnrt: %d CUDA device(s), driver %d.%d; using device %d (sm_%d)\n", n,
	       version / 1000, version % 1000 / 10, dev, sm);
	return 0;
}
