/*
 * check_events_log.c — the producers' own log of what they emitted and what the stream
 * acknowledged (format 1, docs/OPERATIONS.md "The events log"):
 *
 *   # comments and empty lines anywhere
 *   gamefn-events-log 1                 first line that is not a comment
 *   ack  <source_id> <seq>[-<last>]     the stream acknowledged these (stored, duplicate or not)
 *   emit <source_id> <seq>[-<last>]     handed to the producer (spooled): delivery pending or done
 *   drop <source_id> <seq>[-<last>]     dropped by the producer (spool over its limit), never sent
 *
 * Fields are separated by spaces or tabs; source ids are tokens of 1..64 bytes of
 * [A-Za-z0-9_-]; sequences are 1..2^63-1 and first <= last. Lines may repeat or overlap:
 * each kind is a set of (source, seq).
 *
 * Design notes: parsed into ck_range rows (one per line); the sets are normalised (sorted,
 * merged) when the events are analysed. A malformed line rejects the whole file: a check
 * against half a log would report events as lost that the log simply did not list.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_int.h"

enum { SOURCE_MAX = 64 };

static bool is_token(const char *s, size_t n)
{
    if (n == 0 || n > SOURCE_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        if (!ok)
            return false;
    }
    return true;
}

static bool parse_seq(const char *s, char **end, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, end, 10);
    if (errno || v == 0 || v > INT64_MAX)
        return false;
    *out = v;
    return true;
}

/* Splits `line` (NUL-terminated, modified) into at most 4 fields; returns their number. */
static int fields(char *line, char **f)
{
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (n == 4)
            return 5;
        f[n++] = tok;
    }
    return n;
}

static const char *parse_line(gf_check *c, char *line, bool *header)
{
    char *f[4];
    int n = fields(line, f);
    if (n == 0)
        return NULL;
    if (!*header) {
        if (n != 2 || strcmp(f[0], "gamefn-events-log") != 0)
            return "expected the header 'gamefn-events-log 1'";
        if (strcmp(f[1], "1") != 0)
            return "unknown format (this checker reads format 1)";
        *header = true;
        return NULL;
    }
    if (n != 3)
        return "expected '<ack|emit|drop> <source_id> <seq>[-<last>]'";
    uint8_t kind = strcmp(f[0], "ack") == 0    ? CK_LOG_ACK
                   : strcmp(f[0], "emit") == 0 ? CK_LOG_EMIT
                   : strcmp(f[0], "drop") == 0 ? CK_LOG_DROP
                                               : 255;
    if (kind == 255)
        return "the first field must be ack, emit or drop";
    if (!is_token(f[1], strlen(f[1])))
        return "the source id must be 1..64 characters of A-Z a-z 0-9 _ -";
    uint64_t first = 0, last = 0;
    char *end = NULL;
    if (!parse_seq(f[2], &end, &first))
        return "the sequence must be a whole number 1..2^63-1";
    last = first;
    if (*end == '-' && !parse_seq(end + 1, &end, &last))
        return "the range's last sequence must be a whole number 1..2^63-1";
    if (*end)
        return "the sequence must be <seq> or <first>-<last>";
    if (last < first)
        return "a range's last sequence is below its first";
    uint32_t src = ck_intern(&c->sources, f[1], NULL);
    if (src == CK_NONE ||
        !ck_grow((void **)&c->ranges, &c->capranges, c->nranges + 1, sizeof *c->ranges)) {
        c->nomem = true;
        return "out of memory";
    }
    c->ranges[c->nranges++] = (ck_range){src, kind, first, last};
    return NULL;
}

gf_err gf_check_events_log(gf_check *c, const char *text, size_t len, char *why, size_t why_size)
{
    if (c->nomem || c->finished)
        return c->nomem ? GF_ERR_NOMEM : GF_ERR_INVALID;
    size_t keep = c->nranges, lineno = 0;
    bool header = false;
    char line[4096 + 2];
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        lineno++;
        const char *problem = NULL;
        if (n > 4096) {
            problem = "line longer than 4096 bytes";
        } else if (memchr(text + at, 0, n)) {
            problem = "a NUL byte";
        } else {
            memcpy(line, text + at, n);
            line[n] = 0;
            if (n && line[n - 1] == '\r')
                line[n - 1] = 0;
            if (line[0] != '#')
                problem = parse_line(c, line, &header);
        }
        if (problem) {
            if (why)
                snprintf(why, why_size, "line %zu: %s", lineno, problem);
            c->nranges = keep;
            return c->nomem ? GF_ERR_NOMEM : GF_ERR_INVALID;
        }
        at += n + 1;
    }
    if (!header) {
        if (why)
            snprintf(why, why_size, "line 1: expected the header 'gamefn-events-log 1'");
        return GF_ERR_INVALID;
    }
    c->have_log = true;
    return GF_OK;
}
