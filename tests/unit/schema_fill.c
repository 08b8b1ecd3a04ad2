/*
 * schema_fill.c — see schema_fill.h.
 *
 * Design notes: everything is driven by protobuf-c's descriptors (field type,
 * label, offsets, oneof flag), so it follows the .proto files automatically. Values
 * come from one counter per message tree, so no two fields share a value and a
 * decoder that swapped two fields would be caught. Integers are chosen to need
 * long varints (negative int64, values near 2^64) and strings hold multi-byte UTF-8.
 */
#include "schema_fill.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct filler {
    uint64_t n;       /* value counter */
    unsigned variant; /* which member of each oneof */
} filler;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    assert_non_null(p);
    return p;
}

static size_t elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    default: /* 32-bit ints, enum, bool (protobuf_c_boolean), float */
        return 4;
    }
}

/* Index of fd among the members of its oneof, and the number of members. */
static void oneof_position(const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *fd,
                           unsigned *index, unsigned *count)
{
    *index = 0;
    *count = 0;
    for (unsigned j = 0; j < d->n_fields; j++) {
        const ProtobufCFieldDescriptor *o = &d->fields[j];
        if (!(o->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) ||
            o->quantifier_offset != fd->quantifier_offset)
            continue;
        if (o < fd)
            (*index)++;
        (*count)++;
    }
}

unsigned sf_variants(const ProtobufCMessageDescriptor *d)
{
    unsigned most = 1;
    for (unsigned i = 0; i < d->n_fields; i++) {
        unsigned index, count;
        if (!(d->fields[i].flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
            continue;
        oneof_position(d, &d->fields[i], &index, &count);
        most = count > most ? count : most;
    }
    return most;
}

static ProtobufCMessage *new_message(const ProtobufCMessageDescriptor *d, filler *f, int depth);

static void fill_value(const ProtobufCFieldDescriptor *fd, void *dst, filler *f, int depth)
{
    uint64_t k = ++f->n;
    switch (fd->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: {
        int32_t v = (int32_t)(k * 7919u);
        *(int32_t *)dst = (k & 1) ? -v : v;
        break;
    }
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        *(uint32_t *)dst = (uint32_t)(k * 2654435761u) | 1u;
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: {
        int64_t v = (int64_t)((k * 1000003u * 1000000007u) >> 1); /* wraps, never overflows */
        *(int64_t *)dst = (k & 1) ? -v : v;
        break;
    }
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        *(uint64_t *)dst = UINT64_MAX - k;
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        *(float *)dst = (float)k + 0.25f;
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        *(double *)dst = ((k & 1) ? -1.0 : 1.0) * ((double)k * 1.5 + 0.125);
        break;
    case PROTOBUF_C_TYPE_BOOL:
        *(protobuf_c_boolean *)dst = 1;
        break;
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumDescriptor *e = fd->descriptor;
        assert_true(e->n_values > 1);
        /* any value but the zero default */
        *(int *)dst = e->values[1 + k % (e->n_values - 1)].value;
        break;
    }
    case PROTOBUF_C_TYPE_STRING: {
        char buf[64];
        snprintf(buf, sizeof buf, "%s-%llu-\xc3\xa9\xe2\x82\xac", fd->name, (unsigned long long)k);
        char *s = strdup(buf);
        assert_non_null(s);
        *(char **)dst = s;
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData *b = dst;
        b->len = 3 + k % 5;
        b->data = xcalloc(b->len, 1);
        for (size_t i = 0; i < b->len; i++)
            b->data[i] = (uint8_t)(k + i * 0x55u); /* includes 0x00 and 0xff over the run */
        b->data[0] = 0xff;
        b->data[1] = 0x00;
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        *(ProtobufCMessage **)dst = new_message(fd->descriptor, f, depth + 1);
        break;
    }
}

static void fill_message(ProtobufCMessage *m, filler *f, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    char *base = (char *)m;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            unsigned index, count;
            oneof_position(d, fd, &index, &count);
            if (index != f->variant % count)
                continue;
            *(uint32_t *)(base + fd->quantifier_offset) = fd->id;
            fill_value(fd, base + fd->offset, f, depth);
        } else if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = depth < 6 ? 2 : 0, es = elem_size(fd->type);
            char *arr = n ? xcalloc(n, es) : NULL;
            for (size_t k = 0; k < n; k++)
                fill_value(fd, arr + k * es, f, depth);
            *(size_t *)(base + fd->quantifier_offset) = n;
            *(void **)(base + fd->offset) = arr;
        } else {
            assert_int_equal(fd->label, PROTOBUF_C_LABEL_NONE); /* proto3 only */
            if (fd->type == PROTOBUF_C_TYPE_MESSAGE && depth >= 6)
                continue;
            fill_value(fd, base + fd->offset, f, depth);
        }
    }
}

static ProtobufCMessage *new_message(const ProtobufCMessageDescriptor *d, filler *f, int depth)
{
    ProtobufCMessage *m = xcalloc(1, d->sizeof_message);
    protobuf_c_message_init(d, m);
    fill_message(m, f, depth);
    return m;
}

ProtobufCMessage *sf_new(const ProtobufCMessageDescriptor *d, unsigned variant)
{
    filler f = {.n = 0, .variant = variant};
    return new_message(d, &f, 0);
}

uint8_t *sf_pack(const ProtobufCMessage *m, size_t *len)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = xcalloc(n, 1);
    assert_int_equal(protobuf_c_message_pack(m, buf), n);
    *len = n;
    return buf;
}

static bool value_equal(const ProtobufCFieldDescriptor *fd, const void *a, const void *b)
{
    switch (fd->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *x = *(char *const *)a, *y = *(char *const *)b;
        return strcmp(x ? x : "", y ? y : "") == 0;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *x = a, *y = b;
        return x->len == y->len && (x->len == 0 || memcmp(x->data, y->data, x->len) == 0);
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        return sf_equal(*(ProtobufCMessage *const *)a, *(ProtobufCMessage *const *)b);
    case PROTOBUF_C_TYPE_BOOL:
        return !*(const protobuf_c_boolean *)a == !*(const protobuf_c_boolean *)b;
    default: /* bitwise: the filler never makes NaN, and -0.0 must survive as -0.0 */
        return memcmp(a, b, elem_size(fd->type)) == 0;
    }
}

bool sf_equal(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
    if (a == NULL || b == NULL) {
        if (a != b)
            fprintf(stderr, "sf_equal: one submessage is missing\n");
        return a == b;
    }
    const ProtobufCMessageDescriptor *d = a->descriptor;
    if (b->descriptor != d)
        return false;
    const char *pa = (const char *)a, *pb = (const char *)b;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        bool same = true;
        if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            uint32_t ca = *(const uint32_t *)(pa + fd->quantifier_offset);
            uint32_t cb = *(const uint32_t *)(pb + fd->quantifier_offset);
            same = ca == cb && (ca != fd->id || value_equal(fd, pa + fd->offset, pb + fd->offset));
        } else if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t na = *(const size_t *)(pa + fd->quantifier_offset);
            size_t nb = *(const size_t *)(pb + fd->quantifier_offset);
            const char *xa = *(char *const *)(pa + fd->offset);
            const char *xb = *(char *const *)(pb + fd->offset);
            size_t es = elem_size(fd->type);
            same = na == nb;
            for (size_t k = 0; same && k < na; k++)
                same = value_equal(fd, xa + k * es, xb + k * es);
        } else {
            same = value_equal(fd, pa + fd->offset, pb + fd->offset);
        }
        if (!same) {
            fprintf(stderr, "sf_equal: %s.%s differs\n", d->name, fd->name);
            return false;
        }
    }
    return true;
}

/* Reads a varint at buf[*i]; false if it runs past len (test input is our own encoding). */
static bool read_varint(const uint8_t *buf, size_t len, size_t *i, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; *i < len && shift < 64; shift += 7) {
        uint8_t b = buf[(*i)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

bool *sf_field_boundaries(const uint8_t *buf, size_t len)
{
    bool *mark = xcalloc(len + 1, sizeof *mark);
    size_t i = 0;
    mark[0] = true;
    while (i < len) {
        uint64_t tag = 0, n = 0;
        assert_true(read_varint(buf, len, &i, &tag));
        switch (tag & 7) {
        case 0:
            assert_true(read_varint(buf, len, &i, &n));
            break;
        case 1:
            i += 8;
            break;
        case 2:
            assert_true(read_varint(buf, len, &i, &n));
            i += n;
            break;
        case 5:
            i += 4;
            break;
        default:
            fail_msg("unexpected wire type %u in our own encoding", (unsigned)(tag & 7));
        }
        assert_true(i <= len);
        mark[i] = true;
    }
    return mark;
}

static size_t put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

size_t sf_wrong_wire_type(const ProtobufCFieldDescriptor *fd, uint8_t *out)
{
    size_t n = 0;
    switch (fd->type) {
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        n = put_varint(out, (uint64_t)fd->id << 3 | 0); /* a varint instead */
        out[n++] = 0x01;
        break;
    default: /* varint types get a fixed32 */
        n = put_varint(out, (uint64_t)fd->id << 3 | 5);
        memcpy(out + n, "\x01\x02\x03\x04", 4);
        n += 4;
        break;
    }
    return n;
}

uint64_t sf_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}
