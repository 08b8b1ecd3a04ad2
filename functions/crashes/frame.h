/*
 * frame.h — one stack frame line: is it a frame, and its normalised form. Private to
 * the crashes library; the rules are documented in fingerprint.h.
 */
#ifndef GAMEFN_CRASH_FRAME_H
#define GAMEFN_CRASH_FRAME_H

#include <stdbool.h>
#include <stddef.h>

enum { GF_FRAME_LINE_MAX = 1024 };

typedef enum gf_frame_kind {
    GF_FRAME_NONE = 0,
    GF_FRAME_WEAK,   /* "Name.Or:Method (...": only when a section has no strong frame */
    GF_FRAME_STRONG, /* "#N", "frame #N", "at ", "N  module", "module!symbol" */
} gf_frame_kind;

gf_frame_kind gf_frame_classify(const char *line, size_t len);

/* Writes the normalised frame (at most GF_FINGERPRINT_FRAME_MAX bytes, then a NUL)
 * into out; returns its length (0: nothing left of it). */
size_t gf_frame_normalize(const char *line, size_t len, char *out);

#endif
