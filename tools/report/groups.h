/*
 * groups.h — samples of one numeric column grouped by one or two KEY columns (a mode and
 * a shape, a mode alone), each group's values sorted for percentiles and curves.
 *
 * Groups come in order of their keys' first appearance in the file, first key first.
 * Ownership: gf_groups_collect allocates the array and the values; gf_groups_free frees
 * both (NULL is fine).
 */
#ifndef GAMEFN_REPORT_GROUPS_H
#define GAMEFN_REPORT_GROUPS_H

#include <stddef.h>

#include "gamefn/err.h"
#include "tsv.h"

typedef struct gf_group {
    int a, b;  /* key indices in the two columns (b is 0 without a second column) */
    double *v; /* sorted, finite, times scale */
    size_t n;
    size_t rows; /* selected rows of the group, measured or not */
} gf_group;

/* Groups the rows with sel[i] != 0 (sel NULL: every row) by ca and cb (cb may be NULL),
 * collecting num[i] * scale where finite. Groups without selected rows are left out.
 * GF_ERR_NOMEM, GF_ERR_INVALID (a column that is not a KEY). */
gf_err gf_groups_collect(const gf_tsv_table *t, const gf_tsv_column *ca, const gf_tsv_column *cb,
                         const double *num, const unsigned char *sel, double scale, gf_group **out,
                         size_t *n);
void gf_groups_free(gf_group *g, size_t n);

#endif
