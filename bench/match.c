/* Placeholder until the match benchmark lands; exits 2 so nothing mistakes it for a result. */
#include <stdio.h>

#include "bench.h"

int gf_bench_match(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "gamefn-bench match: not built yet\n");
    return 2;
}
