/*
 * guard_page.c — a readable region followed by a PROT_NONE page (guard_page.h).
 */
#include "guard_page.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

struct guard_page {
    uint8_t *base;
    size_t size;  /* readable bytes */
    size_t total; /* mapped bytes, guard page included */
};

guard_page *guard_page_new(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    guard_page *g = calloc(1, sizeof *g);
    assert_non_null(g);
    g->size = (size + page - 1) / page * page;
    g->total = g->size + page;
    void *p = mmap(NULL, g->total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    g->base = p;
    assert_int_equal(mprotect(g->base + g->size, page, PROT_NONE), 0);
    return g;
}

const uint8_t *guard_page_place(guard_page *g, const void *data, size_t len)
{
    assert_true(len <= g->size);
    uint8_t *p = g->base + g->size - len;
    if (len > 0)
        memcpy(p, data, len);
    return p;
}

void guard_page_free(guard_page *g)
{
    if (g == NULL)
        return;
    munmap(g->base, g->total);
    free(g);
}
