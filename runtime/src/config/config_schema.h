/*
 * config_schema.h — private: what config_schema.c and config_schema_js.c share: unit
 * constants for bounds, and the jetstream tables (defined in config_schema_js.c,
 * referenced by the top-level table). All static, immutable data.
 */
#ifndef GAMEFN_CONFIG_SCHEMA_H
#define GAMEFN_CONFIG_SCHEMA_H

#include "gamefn/config.h"

#define MS_S        1000.0
#define MS_M        (60 * MS_S)
#define MS_H        (60 * MS_M)
#define MS_D        (24 * MS_H)
#define MIB         (1024.0 * 1024.0)
#define NROWS(rows) (sizeof(rows) / sizeof((rows)[0]))

extern const gf_cfg_table gf__cfg_stream_table;
extern const gf_cfg_table gf__cfg_consumer_table;
extern const gf_cfg_table gf__cfg_bucket_table;
extern const gf_cfg_table gf__cfg_jetstream_table;

#endif
