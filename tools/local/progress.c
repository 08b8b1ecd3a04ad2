/*
 * progress.c — the live progress block (see progress.h).
 */
#include "progress.h"

#include <string.h>

void gf_progress_init(gf_progress *p, FILE *out, bool tty)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->tty = tty;
}

static void erase(gf_progress *p)
{
    if (p->drawn > 0)
        fprintf(p->out, "\033[%zuA", p->drawn);
    fputs("\r\033[J", p->out);
    p->drawn = 0;
}

static void draw(gf_progress *p)
{
    if (!p->tty)
        return;
    erase(p);
    for (size_t i = 0; i < p->n_shown; i++)
        fprintf(p->out, "%s\n", p->shown[i]);
    p->drawn = p->n_shown;
    if (p->extra[0]) {
        fprintf(p->out, "%s\n", p->extra);
        p->drawn++;
    }
    fflush(p->out);
}

void gf_progress_line(gf_progress *p, const char *text)
{
    if (p->n_next < GF_PROGRESS_MAX_LINES)
        snprintf(p->next[p->n_next++], GF_PROGRESS_LINE_MAX, "%s", text);
}

void gf_progress_end(gf_progress *p)
{
    memcpy(p->shown, p->next, sizeof p->shown);
    p->n_shown = p->n_next;
    p->n_next = 0;
    draw(p);
}

void gf_progress_extra(gf_progress *p, const char *text)
{
    snprintf(p->extra, sizeof p->extra, "%s", text);
    draw(p);
}

void gf_progress_note(gf_progress *p, const char *text)
{
    if (p->tty)
        erase(p);
    fprintf(p->out, "%s\n", text);
    fflush(p->out);
    draw(p);
}

void gf_progress_finish(gf_progress *p)
{
    p->drawn = 0;
    fflush(p->out);
}
