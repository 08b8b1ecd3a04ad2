/*
 * guard_page.h — test helper: a readable region followed by a PROT_NONE page, so that a
 * parser fed input placed to end exactly at the page crashes on any read past its end
 * (picohttpparser's trick). Used by the schema decoding and report parsing tests.
 */
#ifndef GAMEFN_TEST_GUARD_PAGE_H
#define GAMEFN_TEST_GUARD_PAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct guard_page guard_page;

/* A readable region of at least `size` bytes followed by a PROT_NONE page. */
guard_page *guard_page_new(size_t size);
/* Copies len bytes so that they end exactly at the guard page; returns where. */
const uint8_t *guard_page_place(guard_page *g, const void *data, size_t len);
void guard_page_free(guard_page *g);

#endif
