/* utf8.c — well-formed UTF-8 (see gamefn/utf8.h), by the table of RFC 3629 §4. */
#include "gamefn/utf8.h"

size_t gf_utf8_char_len(const char *s, size_t avail)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned char c;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (avail == 0)
        return 0;
    c = p[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong forms */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (avail < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++) {
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    }
    return n;
}

bool gf_utf8_valid(const char *s, size_t len)
{
    if (s == NULL)
        return len == 0;
    size_t i = 0;
    while (i < len) {
        size_t n = gf_utf8_char_len(s + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}
