/*
 * frame.c — recognising and normalising one frame line (rules: fingerprint.h).
 *
 * Design notes: each rule is one pass over a line buffer that only ever deletes or
 * shortens (a group becomes "()" / "<>" / "{}", a path its base name), so every pass
 * rewrites in place with a read and a write index and cannot overflow. The passes
 * run in the documented order; an earlier pass may leave separators behind (the "+"
 * of an offset whose number went with the addresses) and a later one cleans them.
 */
#include "frame.h"

#include <stdint.h>
#include <string.h>

#include "fingerprint.h"

typedef struct buf {
    char s[GF_FRAME_LINE_MAX + 1];
    size_t n;
} buf;

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_word(char c)
{
    return is_hex(c) || (c >= 'g' && c <= 'z') || (c >= 'G' && c <= 'Z') || c == '_';
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

static bool starts(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

static size_t skip_spaces(const char *s, size_t n, size_t i)
{
    while (i < n && is_space(s[i]))
        i++;
    return i;
}

/* Length of a run of at most `max` chars of class `ok` at s[0..n), if it is followed
 * by a space; else 0. */
static size_t number_then_space(const char *s, size_t n, size_t max, bool (*ok)(char))
{
    size_t k = 0;
    while (k < n && ok(s[k]))
        k++;
    return k > 0 && k <= max && k < n && is_space(s[k]) ? k : 0;
}

/* "module!symbol": a word character on both sides of a '!'. */
static bool has_module_bang(const char *s, size_t n)
{
    for (size_t i = 1; i + 1 < n; i++)
        if (s[i] == '!' && (is_word(s[i - 1]) || s[i - 1] == '.') && is_word(s[i + 1]))
            return true;
    return false;
}

gf_frame_kind gf_frame_classify(const char *line, size_t len)
{
    size_t i = skip_spaces(line, len, 0);
    const char *s = line + i;
    size_t n = len - i;
    if ((n >= 2 && s[0] == '#' && is_digit(s[1])) || starts(s, n, "frame #") ||
        starts(s, n, "* frame #") || starts(s, n, "at "))
        return GF_FRAME_STRONG;
    if (number_then_space(s, n, 4, is_digit) || has_module_bang(s, n) ||
        (number_then_space(s, n, 4, is_hex) && memchr(s, '`', n) != NULL))
        return GF_FRAME_STRONG;
    size_t k = 0; /* weak: an identifier-like word, then "(" or " (" */
    if (n == 0 || !(is_word(s[0]) && !is_digit(s[0])))
        return GF_FRAME_NONE;
    while (k < n && !is_space(s[k]) && s[k] != '(')
        k++;
    if (k < n && is_space(s[k]))
        k++;
    return k < n && s[k] == '(' && s[k - 1] != ':' ? GF_FRAME_WEAK : GF_FRAME_NONE;
}

/* 1. Frame numbers and markers. */
static void strip_prefix(buf *b)
{
    size_t i = skip_spaces(b->s, b->n, 0);
    if (starts(b->s + i, b->n - i, "* "))
        i = skip_spaces(b->s, b->n, i + 2);
    bool mod = memchr(b->s, '!', b->n) != NULL || memchr(b->s, '`', b->n) != NULL;
    size_t k;
    if (starts(b->s + i, b->n - i, "frame #") || (i < b->n && b->s[i] == '#')) {
        i += b->s[i] == '#' ? 1 : 7;
        while (i < b->n && is_digit(b->s[i]))
            i++;
        if (i < b->n && b->s[i] == ':')
            i++;
    } else if ((k = number_then_space(b->s + i, b->n - i, 4, is_digit)) > 0 ||
               (mod && (k = number_then_space(b->s + i, b->n - i, 4, is_hex)) > 0)) {
        i += k;
    }
    i = skip_spaces(b->s, b->n, i);
    if (starts(b->s + i, b->n - i, "at "))
        i = skip_spaces(b->s, b->n, i + 3);
    if (starts(b->s + i, b->n - i, "pc "))
        i = skip_spaces(b->s, b->n, i + 3);
    memmove(b->s, b->s + i, b->n - i);
    b->n -= i;
}

/* The index of the bracket closing the one at i (same kind, nested), or SIZE_MAX. */
static size_t match(const buf *b, size_t i, char open, char close)
{
    int depth = 0;
    for (size_t j = i; j < b->n; j++) {
        depth += (b->s[j] == open) - (b->s[j] == close);
        if (depth == 0)
            return j;
    }
    return SIZE_MAX;
}

/* 2. Groups: [..] and (BuildId: ..) go, (..=..) -> (), <..> -> <>, {..} -> {}. */
static void groups(buf *b)
{
    static const char open[] = "[(<{", close[] = "])>}";
    size_t w = 0;
    for (size_t r = 0; r < b->n; r++) {
        const char *o = memchr(open, b->s[r], 4);
        size_t end = o ? match(b, r, *o, close[o - open]) : SIZE_MAX;
        if (end == SIZE_MAX) {
            b->s[w++] = b->s[r];
            continue;
        }
        bool args = *o == '(' && memchr(b->s + r, '=', end - r) != NULL;
        bool drop = *o == '[' || starts(b->s + r, b->n - r, "(BuildId:");
        if (*o == '(' && !args && !drop) {
            b->s[w++] = '(';
            continue;
        }
        if (!drop) {
            b->s[w++] = *o;
            b->s[w++] = close[o - open];
        }
        r = end;
    }
    b->n = w;
}

/* 3. Addresses: 0x..., hex`hex, and whole words of 8 or more hex digits. */
static void addresses(buf *b)
{
    size_t w = 0;
    for (size_t r = 0; r < b->n;) {
        bool boundary = r == 0 || !is_word(b->s[r - 1]);
        size_t k = r, digits = 0;
        if (boundary && starts(b->s + r, b->n - r, "0x"))
            k += 2;
        size_t start = k;
        while (k < b->n && (is_hex(b->s[k]) || b->s[k] == '`'))
            digits += is_hex(b->s[k++]);
        bool end = k == b->n || !is_word(b->s[k]);
        if (boundary && end && ((k > start && start > r) || digits >= 8)) {
            r = k;
            continue;
        }
        b->s[w++] = b->s[r++];
    }
    b->n = w;
}

/* 4. Offsets: "+" followed by spaces and a number, or by nothing that continues it. */
static void offsets(buf *b)
{
    size_t w = 0;
    for (size_t r = 0; r < b->n; r++) {
        bool pair = (r > 0 && b->s[r - 1] == '+') || (r + 1 < b->n && b->s[r + 1] == '+');
        if (b->s[r] == '+' && !pair) { /* "C++", "operator++" stay */
            size_t k = skip_spaces(b->s, b->n, r + 1);
            size_t d = k;
            while (d < b->n && is_digit(b->s[d]))
                d++;
            if (d > k || k == b->n || b->s[k] == ')' || b->s[k] == ']' || k > r + 1) {
                r = d - 1;
                continue;
            }
        }
        b->s[w++] = b->s[r];
    }
    b->n = w;
}

/* 5. Line numbers: ":42", ":42:7", ":line 42", " line 42", " Line 42", "@ 42". */
static void line_numbers(buf *b)
{
    size_t w = 0;
    for (size_t r = 0; r < b->n; r++) {
        size_t k = r;
        if (b->s[r] == ':' && (r == 0 || b->s[r - 1] != ':'))
            k = starts(b->s + r, b->n - r, ":line ") ? r + 6 : r + 1;
        else if (starts(b->s + r, b->n - r, " line ") || starts(b->s + r, b->n - r, " Line "))
            k = r + 6;
        else if (b->s[r] == '@')
            k = skip_spaces(b->s, b->n, r + 1);
        size_t d = k;
        while (k > r && d < b->n && is_digit(b->s[d]))
            d++;
        if (d > k) {
            r = d - 1;
            continue;
        }
        b->s[w++] = b->s[r];
    }
    b->n = w;
}

static bool path_delim(char c)
{
    return is_space(c) || c == '(' || c == ')' || c == '<' || c == '>' || c == ',' || c == '"' ||
           c == '\'';
}

/* 6. Paths: a token holding '/' or '\' keeps what follows its last separator. */
static void paths(buf *b)
{
    size_t w = 0;
    for (size_t r = 0; r < b->n;) {
        size_t end = r, base = r;
        while (end < b->n && !path_delim(b->s[end])) {
            if (b->s[end] == '/' || b->s[end] == '\\')
                base = end + 1;
            end++;
        }
        memmove(b->s + w, b->s + base, end - base);
        w += end - base;
        if (end < b->n)
            b->s[w++] = b->s[end];
        r = end + 1;
    }
    b->n = w;
}

/* 7. Spaces collapsed and trimmed, none before '(', no leading "in ". */
static void tidy(buf *b)
{
    size_t w = 0;
    for (size_t r = 0; r < b->n; r++) {
        char c = is_space(b->s[r]) ? ' ' : b->s[r];
        if (c == ' ' && (w == 0 || b->s[w - 1] == ' '))
            continue;
        if (c == '(' && w > 0 && b->s[w - 1] == ' ')
            w--;
        b->s[w++] = c;
    }
    if (w > 0 && b->s[w - 1] == ' ')
        w--;
    b->n = w;
    if (starts(b->s, b->n, "in ")) {
        memmove(b->s, b->s + 3, b->n - 3);
        b->n -= 3;
    }
}

size_t gf_frame_normalize(const char *line, size_t len, char *out)
{
    buf b;
    b.n = len < GF_FRAME_LINE_MAX ? len : GF_FRAME_LINE_MAX;
    memcpy(b.s, line, b.n);
    strip_prefix(&b);
    groups(&b);
    addresses(&b);
    offsets(&b);
    line_numbers(&b);
    paths(&b);
    tidy(&b);
    if (b.n > GF_FINGERPRINT_FRAME_MAX)
        b.n = GF_FINGERPRINT_FRAME_MAX;
    memcpy(out, b.s, b.n);
    out[b.n] = '\0';
    return b.n;
}
