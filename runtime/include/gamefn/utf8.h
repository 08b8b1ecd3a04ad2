/*
 * gamefn/utf8.h — the one UTF-8 check: well-formed per RFC 3629 (no overlong forms, no
 * surrogates, nothing above U+10FFFF), which is what proto3 parsers in other
 * languages and JSON require of strings (protobuf-c does not check).
 *
 * Pure and reentrant.
 */
#ifndef GAMEFN_UTF8_H
#define GAMEFN_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* `len` bytes of `s` are well-formed UTF-8. NULL counts as empty. */
bool gf_utf8_valid(const char *s, size_t len);

/* Bytes in the well-formed character at p (1..4), reading at most `avail` bytes; 0 when
 * p does not start one (invalid byte, cut short, overlong, surrogate, too large). */
size_t gf_utf8_char_len(const char *p, size_t avail);

#endif
