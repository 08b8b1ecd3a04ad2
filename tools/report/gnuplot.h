/*
 * gnuplot.h — plots drawn by gnuplot (Debian's gnuplot-nox) as SVG, inlined in the report.
 *
 * gf_gnuplot_run starts `gnuplot` (the program named by $GAMEFN_GNUPLOT, else gnuplot on
 * PATH) as a child process with no arguments, writes the script to its standard input,
 * and collects its standard output (the SVG) and standard error (its complaints). Nothing
 * goes through a file. The child is killed if it has not finished within timeout_ms.
 * The caller ignores SIGPIPE (a gnuplot that dies early closes its input).
 *
 * gf_svg_inline makes an SVG document fit inside HTML next to others: the XML prolog is
 * dropped, the root gets class="plot", and every id (and every reference to one:
 * href='#x', url(#x)) gets `prefix` so two plots' ids never collide.
 *
 * Ownership: the caller owns the gf_buf's it passes; why is a caller's buffer.
 */
#ifndef GAMEFN_REPORT_GNUPLOT_H
#define GAMEFN_REPORT_GNUPLOT_H

#include <stddef.h>

#include "buf.h"
#include "gamefn/err.h"

/* GF_OK: *svg holds the output. GF_ERR_NOT_FOUND: gnuplot could not be started;
 * GF_ERR_TIMEOUT; GF_ERR_IO: it failed (why: its first error line). */
gf_err gf_gnuplot_run(const char *script, size_t len, int timeout_ms, gf_buf *svg, char *why,
                      size_t whysize);

/* Runs `gnuplot --version`: GF_OK with its version line in version, or an error as above. */
gf_err gf_gnuplot_version(char *version, size_t size, char *why, size_t whysize);

/* Appends the svg element found in svg[0..len) to out, fixed as above. GF_ERR_INVALID when
 * there is no <svg ...>...</svg>. */
gf_err gf_svg_inline(const char *svg, size_t len, const char *prefix, gf_buf *out);

#endif
