/* util.c — tokens, growable arrays and protobuf packing (see gamefn/util.h). */
#include "gamefn/util.h"

#include <stdbool.h>
#include <stdlib.h>

size_t gf_token_len(const char *s, size_t max)
{
    size_t n = 0;
    for (; s != NULL && s[n] != '\0'; n++) {
        unsigned char c = (unsigned char)s[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        if (!ok || n >= max)
            return 0;
    }
    return n;
}

void *gf_grow(void *items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return items;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return NULL;
        ncap *= 2;
    }
    if (size == 0 || ncap > SIZE_MAX / size)
        return NULL;
    void *p = realloc(items, ncap * size);
    if (p != NULL)
        *cap = ncap;
    return p;
}

gf_err gf_pack(const ProtobufCMessage *m, uint8_t **out, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    *out = malloc(*len ? *len : 1);
    if (*out == NULL) {
        *len = 0;
        return GF_ERR_NOMEM;
    }
    protobuf_c_message_pack(m, *out);
    return GF_OK;
}
