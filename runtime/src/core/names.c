/*
 * names.c — the rules for names and subjects (see gamefn/names.h).
 *
 * Design notes: the phrases are the ones config errors have always used, so a config
 * file's error reads "key 'jetstream.streams[0].name': stream name is empty" whether
 * the name came from YAML or a function's declaration. Whitespace and control bytes
 * are the bytes <= 0x20 and 0x7f; bytes >= 0x80 pass (NATS subjects are UTF-8), except
 * in ids and bucket names, which are ASCII by rule.
 */
#include "gamefn/names.h"

#include <string.h>

#include "core/why.h"

static bool is_space_or_ctl(unsigned char c)
{
    return c <= 0x20 || c == 0x7f;
}

static bool is_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* [A-Za-z0-9_-]{1,max} */
static bool word_ok(const char *s, size_t max, char *why, size_t why_size)
{
    if (!s || !*s)
        return gf__why(why, why_size, "is empty");
    size_t n = strlen(s);
    if (n > max)
        return gf__why(why, why_size, "is longer than %zu bytes", max);
    for (size_t i = 0; i < n; i++) {
        if (!is_word((unsigned char)s[i]))
            return gf__why(why, why_size, "may hold only letters, digits, '_' and '-'");
    }
    return true;
}

bool gf_name_id_ok(const char *s, size_t max, char *why, size_t why_size)
{
    return word_ok(s, max, why, why_size);
}

bool gf_name_bucket_ok(const char *s, char *why, size_t why_size)
{
    return word_ok(s, GF_NAME_BUCKET_MAX, why, why_size);
}

bool gf_name_asset_ok(const char *s, char *why, size_t why_size)
{
    if (!s || !*s)
        return gf__why(why, why_size, "is empty");
    if (strlen(s) > GF_NAME_MAX)
        return gf__why(why, why_size, "is longer than %d bytes", GF_NAME_MAX);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (is_space_or_ctl(*p))
            return gf__why(why, why_size, "contains whitespace or a control character");
        if (strchr(".*>/\\", *p))
            return gf__why(why, why_size,
                           "contains one of '.', '*', '>', '/', '\\' (NATS forbids them in names)");
    }
    return true;
}

bool gf_name_token_ok(const char *s, char *why, size_t why_size)
{
    if (!s || !*s)
        return gf__why(why, why_size, "is empty");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (is_space_or_ctl(*p))
            return gf__why(why, why_size, "contains whitespace or a control character");
        if (strchr(".*>", *p))
            return gf__why(why, why_size,
                           "contains '.', '*' or '>' (it must be one subject token)");
    }
    return true;
}

bool gf_name_subject_ok(const char *s, bool wildcards, char *why, size_t why_size)
{
    if (!s || !*s)
        return gf__why(why, why_size, "is empty");
    const char *tok = s;
    for (const char *p = s;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c != '\0' && is_space_or_ctl(c))
            return gf__why(why, why_size, "contains whitespace or a control character");
        if (c != '.' && c != '\0')
            continue;
        size_t n = (size_t)(p - tok);
        if (n == 0)
            return gf__why(why, why_size, "has an empty token ('..' or a leading/trailing '.')");
        bool wild = memchr(tok, '*', n) || memchr(tok, '>', n);
        if (wild && !wildcards)
            return gf__why(why, why_size,
                           "contains a wildcard ('*' or '>'), which a publish cannot");
        if (wild && n > 1)
            return gf__why(why, why_size,
                           "uses '*' or '>' inside a token (a wildcard must be a whole token)");
        if (n == 1 && *tok == '>' && c != '\0')
            return gf__why(why, why_size, "has '>' before the last token");
        if (c == '\0')
            return true;
        tok = p + 1;
    }
}

bool gf_name_kv_key_ok(const char *s, char *why, size_t why_size)
{
    if (!s || !*s)
        return gf__why(why, why_size, "is empty");
    size_t n = strlen(s);
    if (n > GF_NAME_KV_KEY_MAX)
        return gf__why(why, why_size, "is longer than %d bytes", GF_NAME_KV_KEY_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_word(c) && !strchr("/=.", c))
            return gf__why(why, why_size,
                           "may hold only letters, digits and '_', '-', '/', '=', '.'");
    }
    if (s[0] == '.' || s[n - 1] == '.' || strstr(s, ".."))
        return gf__why(why, why_size, "has an empty token ('..' or a leading/trailing '.')");
    return true;
}
