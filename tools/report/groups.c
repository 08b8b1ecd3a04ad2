/*
 * groups.c — grouped samples (groups.h): one pass to count, one to fill, a sort per group.
 */
#include "groups.h"

#include <math.h>
#include <stdlib.h>

#include "stats.h"

gf_err gf_groups_collect(const gf_tsv_table *t, const gf_tsv_column *ca, const gf_tsv_column *cb,
                         const double *num, const unsigned char *sel, double scale, gf_group **out,
                         size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!t || !ca || ca->kind != GF_TSV_KEY || (cb && cb->kind != GF_TSV_KEY) || !num)
        return GF_ERR_INVALID;
    size_t nb = cb ? GF_TSV_MAX_KEYS : 1;
    size_t cells = GF_TSV_MAX_KEYS * nb;
    size_t *rows = calloc(cells, sizeof *rows), *vals = calloc(cells, sizeof *vals);
    gf_group *g = NULL;
    gf_err e = GF_ERR_NOMEM;
    if (!rows || !vals)
        goto out;
    for (size_t i = 0; i < t->nrows; i++) {
        if (sel && !sel[i])
            continue;
        size_t cell = (size_t)ca->key[i] * nb + (cb ? cb->key[i] : 0);
        rows[cell]++;
        vals[cell] += isfinite(num[i]);
    }
    size_t ng = 0;
    for (size_t c = 0; c < cells; c++)
        ng += rows[c] > 0;
    g = calloc(ng ? ng : 1, sizeof *g);
    if (!g)
        goto out;
    size_t *slot = rows; /* reused: cell -> group index + 1 after counting */
    size_t k = 0;
    for (size_t c = 0; c < cells; c++) {
        if (!rows[c])
            continue;
        g[k].a = (int)(c / nb);
        g[k].b = (int)(c % nb);
        g[k].rows = rows[c];
        g[k].v = malloc(sizeof *g[k].v * (vals[c] ? vals[c] : 1));
        if (!g[k].v) {
            gf_groups_free(g, ng);
            g = NULL;
            goto out;
        }
        slot[c] = ++k;
    }
    for (size_t i = 0; i < t->nrows; i++) {
        if ((sel && !sel[i]) || !isfinite(num[i]))
            continue;
        gf_group *x = &g[slot[(size_t)ca->key[i] * nb + (cb ? cb->key[i] : 0)] - 1];
        x->v[x->n++] = num[i] * scale;
    }
    for (size_t i = 0; i < ng; i++)
        gf_stats_sort(g[i].v, g[i].n);
    *out = g;
    *n = ng;
    e = GF_OK;
out:
    free(rows);
    free(vals);
    return e;
}

void gf_groups_free(gf_group *g, size_t n)
{
    if (!g)
        return;
    for (size_t i = 0; i < n; i++)
        free(g[i].v);
    free(g);
}
