/*
 * fingerprint.c — the crashing thread's frames, normalised and hashed
 * (contract and rules: fingerprint.h; one frame: frame.c).
 *
 * Design notes: two passes over the stack text, no allocation. The first splits it
 * into sections at thread headers and picks the crashing thread's; the second walks
 * that section's frame lines, normalises each into a stack buffer and feeds it to an
 * incremental BLAKE2b, so the cost is linear in the stack and independent of N.
 */
#include "fingerprint.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "frame.h"

typedef struct span {
    size_t begin, end; /* byte offsets into the stack */
} span;

typedef struct line_iter {
    const char *s;
    size_t len, pos;
} line_iter;

/* The next line without its "\n" / "\r\n"; false at the end. */
static bool next_line(line_iter *it, span *line)
{
    if (it->pos >= it->len)
        return false;
    const char *nl = memchr(it->s + it->pos, '\n', it->len - it->pos);
    size_t end = nl ? (size_t)(nl - it->s) : it->len;
    line->begin = it->pos;
    line->end = end > it->pos && it->s[end - 1] == '\r' ? end - 1 : end;
    it->pos = end + 1;
    return true;
}

static const char *trimmed(const char *s, const span *l, size_t *n)
{
    size_t b = l->begin, e = l->end;
    while (b < e && (s[b] == ' ' || s[b] == '\t'))
        b++;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t'))
        e--;
    *n = e - b;
    return s + b;
}

static bool contains_ci(const char *s, size_t n, const char *word)
{
    size_t k = strlen(word);
    for (size_t i = 0; i + k <= n; i++)
        if (strncasecmp(s + i, word, k) == 0)
            return true;
    return false;
}

typedef enum header_kind { NOT_HEADER = 0, THREAD, THREAD_CRASHED, BACKTRACE } header_kind;

static header_kind header(const char *s, size_t n)
{
    if (n == 10 && memcmp(s, "backtrace:", 10) == 0)
        return BACKTRACE;
    if (n > 7 && memcmp(s, "Thread ", 7) == 0 && s[7] >= '0' && s[7] <= '9')
        return contains_ci(s, n, "crashed") ? THREAD_CRASHED : THREAD;
    return NOT_HEADER;
}

/* Section picks, best first: a "crashed" header, a "<signal handler called>" line,
 * Android's first "backtrace:", the first section with a frame. */
enum { PICK_CRASHED, PICK_SIGNAL, PICK_BACKTRACE, PICK_FRAMED, PICKS };

typedef struct picks {
    span sec[PICKS];
    bool has[PICKS];
} picks;

/* The section just ended: remember it for every pick it is the first to qualify for. */
static void close_section(picks *p, span sec, header_kind kind, bool signal, bool framed)
{
    const bool why[PICKS] = {kind == THREAD_CRASHED, signal, kind == BACKTRACE, framed};
    for (int k = 0; k < PICKS; k++)
        if (why[k] && !p->has[k]) {
            p->sec[k] = sec;
            p->has[k] = true;
        }
}

static span crashing_section(const char *stack, size_t len)
{
    picks p = {0};
    line_iter it = {stack, len, 0};
    span line, sec = {0, 0};
    header_kind kind = NOT_HEADER;
    bool signal = false, framed = false;
    size_t n;
    while (next_line(&it, &line)) {
        const char *t = trimmed(stack, &line, &n);
        header_kind h = header(t, n);
        if (h != NOT_HEADER) {
            close_section(&p, sec, kind, signal, framed);
            sec = (span){it.pos < len ? it.pos : len, it.pos < len ? it.pos : len};
            kind = h;
            signal = framed = false;
            continue;
        }
        sec.end = line.end;
        signal = signal || contains_ci(t, n, "<signal handler called>");
        framed = framed || gf_frame_classify(t, n) != GF_FRAME_NONE;
    }
    close_section(&p, sec, kind, signal, framed);
    for (int k = 0; k < PICKS; k++)
        if (p.has[k])
            return p.sec[k];
    return (span){0, 0};
}

/* Calls visit for each frame of the section, at most max; returns how many. */
typedef void (*frame_fn)(void *ctx, const char *frame, size_t len);

static unsigned walk_frames(const char *stack, span sec, unsigned max, frame_fn visit, void *ctx)
{
    gf_frame_kind want = GF_FRAME_WEAK;
    line_iter it = {stack, sec.end, sec.begin};
    span line;
    size_t n;
    while (next_line(&it, &line)) {
        const char *t = trimmed(stack, &line, &n);
        if (gf_frame_classify(t, n) == GF_FRAME_STRONG)
            want = GF_FRAME_STRONG;
    }
    unsigned count = 0;
    char frame[GF_FINGERPRINT_FRAME_MAX + 1];
    it = (line_iter){stack, sec.end, sec.begin};
    while (count < max && next_line(&it, &line)) {
        const char *t = trimmed(stack, &line, &n);
        if (n == 0 && count > 0)
            break; /* the crashing thread's frames are contiguous */
        if (gf_frame_classify(t, n) != want)
            continue;
        size_t flen = gf_frame_normalize(t, n, frame);
        if (flen == 0)
            continue;
        visit(ctx, frame, flen);
        count++;
    }
    return count;
}

static void hash_frame(void *ctx, const char *frame, size_t len)
{
    crypto_generichash_update(ctx, (const unsigned char *)frame, len);
    crypto_generichash_update(ctx, (const unsigned char *)"\n", 1);
}

static void to_hex(const unsigned char *h, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < GF_FINGERPRINT_HEX_LEN / 2; i++) {
        hex[2 * i] = digits[h[i] >> 4];
        hex[2 * i + 1] = digits[h[i] & 15];
    }
    hex[GF_FINGERPRINT_HEX_LEN] = '\0';
}

static bool check_args(const char *stack, size_t stack_len, unsigned *max_frames)
{
    if (*max_frames == 0)
        *max_frames = GF_FINGERPRINT_FRAMES_DEFAULT;
    return (stack != NULL || stack_len == 0) && stack_len <= GF_FINGERPRINT_STACK_MAX &&
           *max_frames <= GF_FINGERPRINT_FRAMES_MAX;
}

gf_err gf_fingerprint_compute(const char *stack, size_t stack_len, const char *signature,
                              size_t signature_len, unsigned max_frames, gf_fingerprint *out)
{
    if (!check_args(stack, stack_len, &max_frames) || sodium_init() < 0)
        return GF_ERR_INVALID;
    static const char frames_tag[] = "gamefn-crash-v1\n", sig_tag[] = "gamefn-crash-sig-v1\n";
    crypto_generichash_state st;
    unsigned char h[GF_FINGERPRINT_HEX_LEN / 2];
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    crypto_generichash_update(&st, (const unsigned char *)frames_tag, sizeof frames_tag - 1);
    out->frames =
        walk_frames(stack, crashing_section(stack, stack_len), max_frames, hash_frame, &st);
    if (out->frames == 0) {
        if (signature == NULL || signature_len == 0 || signature_len > GF_FINGERPRINT_SIGNATURE_MAX)
            return GF_ERR_INVALID;
        crypto_generichash_init(&st, NULL, 0, sizeof h);
        crypto_generichash_update(&st, (const unsigned char *)sig_tag, sizeof sig_tag - 1);
        crypto_generichash_update(&st, (const unsigned char *)signature, signature_len);
    }
    crypto_generichash_final(&st, h, sizeof h);
    to_hex(h, out->hex);
    return GF_OK;
}

typedef struct text_out {
    char *out;
    size_t size, len;
} text_out;

static void append_frame(void *ctx, const char *frame, size_t len)
{
    text_out *t = ctx;
    for (size_t i = 0; i <= len && t->len + 1 < t->size; i++)
        t->out[t->len++] = i < len ? frame[i] : '\n';
    t->out[t->len] = '\0';
}

gf_err gf_fingerprint_normalize(const char *stack, size_t stack_len, unsigned max_frames, char *out,
                                size_t size, unsigned *frames)
{
    *frames = 0;
    if (!check_args(stack, stack_len, &max_frames) || out == NULL || size == 0)
        return GF_ERR_INVALID;
    text_out t = {out, size, 0};
    out[0] = '\0';
    *frames = walk_frames(stack, crashing_section(stack, stack_len), max_frames, append_frame, &t);
    return GF_OK;
}
