/*
 * tools/local/progress.h — the live progress block on a terminal.
 *
 * The simulated game writes its progress as blocks of lines ("P <text>" lines ended by
 * an "E" line, see support/playsim); the supervisor adds a line of its own (restarts)
 * and draws the block in place: cursor up over the previous block, clear to the end of
 * the screen, print. Notes (a restart, a message) are printed once above the block and
 * stay in the scrollback. When stdout is not a terminal nothing of the block is drawn
 * and notes are printed as plain lines.
 *
 * Threads: one. Ownership: gf_progress_fini frees the buffers.
 */
#ifndef GAMEFN_LOCAL_PROGRESS_H
#define GAMEFN_LOCAL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum { GF_PROGRESS_MAX_LINES = 24, GF_PROGRESS_LINE_MAX = 200 };

typedef struct gf_progress {
    FILE *out;
    bool tty;
    char next[GF_PROGRESS_MAX_LINES][GF_PROGRESS_LINE_MAX]; /* the block being received */
    size_t n_next;
    char shown[GF_PROGRESS_MAX_LINES][GF_PROGRESS_LINE_MAX]; /* the last complete block */
    size_t n_shown;
    size_t drawn;                     /* lines of the block on the screen now */
    char extra[GF_PROGRESS_LINE_MAX]; /* the supervisor's own line */
} gf_progress;

void gf_progress_init(gf_progress *p, FILE *out, bool tty);

/* A line of the block being received / the block is complete: draw it. */
void gf_progress_line(gf_progress *p, const char *text);
void gf_progress_end(gf_progress *p);

/* The supervisor's line under the block (restarts); redrawn at once. */
void gf_progress_extra(gf_progress *p, const char *text);

/* A line printed once, above the block. */
void gf_progress_note(gf_progress *p, const char *text);

/* Leaves the last block on the screen; later output goes below it. */
void gf_progress_finish(gf_progress *p);

#endif
