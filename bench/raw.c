/* Placeholder until the raw benchmark lands; exits 2 so nothing mistakes it for a result. */
#include <stdio.h>

#include "bench.h"

int gf_bench_raw(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "gamefn-bench raw: not built yet\n");
    return 2;
}
