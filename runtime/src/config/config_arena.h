/*
 * config_arena.h — private: the bump allocator that owns every string and array of a
 * loaded config (struct gf_config_arena), and of the temporary YAML node tree.
 *
 * Ownership: gf__cfg_arena_new() returns an arena the caller frees with
 * gf_config_arena_free(); everything allocated from it dies with it. Not thread-safe:
 * one arena is filled by one thread, then only read.
 */
#ifndef GAMEFN_CONFIG_ARENA_H
#define GAMEFN_CONFIG_ARENA_H

#include <stddef.h>

struct gf_config_arena;

struct gf_config_arena *gf__cfg_arena_new(void);

/* Zeroed, aligned for any type; NULL when out of memory or n * size overflows. */
void *gf__cfg_arena_calloc(struct gf_config_arena *a, size_t n, size_t size);

/* Copies len bytes and appends a NUL. */
char *gf__cfg_arena_strndup(struct gf_config_arena *a, const char *s, size_t len);
char *gf__cfg_arena_strdup(struct gf_config_arena *a, const char *s);

#endif
