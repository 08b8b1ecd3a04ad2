/*
 * bench/bench.h — subcommands of the gamefn-bench program.
 *
 * Each subcommand parses its own flags, prints human-readable figures, and with
 * --json prints one JSON object as the very last line of stdout. Figures are
 * measured in the run that prints them; ratios are against baselines measured in
 * the same run, because the machines are shared and noisy (docs/BENCHMARKS.md).
 */
#ifndef GAMEFN_BENCH_H
#define GAMEFN_BENCH_H

int gf_bench_raw(int argc, char **argv);         /* raw JetStream / KV / req-rep rates */
int gf_bench_match(int argc, char **argv);       /* matchmaking engine tick */
int gf_bench_partitioned(int argc, char **argv); /* events/s through a partitioned consumer */
int gf_bench_intake(int argc, char **argv);      /* ticket.create rate of intake replicas */
int gf_bench_service(int argc, char **argv);     /* intake + ticker + matchers: time to match */

#endif
