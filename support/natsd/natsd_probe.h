/*
 * support/natsd/natsd_probe.h — private to the harness: what natsd.c asks a
 * running nats-server (ports file, client INFO line, HTTP monitoring JSON).
 *
 * All probes are synchronous, bounded by timeout_ms, allocate only the JSON they
 * return (caller json_decref()s it) and are safe to call from any thread.
 */
#ifndef GAMEFN_TEST_NATSD_PROBE_H
#define GAMEFN_TEST_NATSD_PROBE_H

#include <jansson.h>
#include <sys/types.h>

/* Reads "<dir>/<anything>_<pid>.ports", written by the server when
 * ports_file_dir is set. Returns 1 with the ports filled (0 for a listener the
 * file does not list), 0 if the file is not there (yet), -1 if it is malformed. */
int gf_natsd_probe_ports_file(const char *dir, pid_t pid, int *client, int *monitor, int *cluster);

/* Connects to 127.0.0.1:port and reads the server's first protocol line, which
 * must be "INFO {json}". Returns 0 with *info set, -1 otherwise (why in err). */
int gf_natsd_probe_info(const char *host, int port, int timeout_ms, json_t **info, char *err,
                        size_t err_size);

/* GET http://127.0.0.1:port<path> with HTTP/1.0. Returns 0 with the status code
 * and the body parsed as JSON, -1 otherwise (why in err). */
int gf_natsd_probe_http(int port, const char *path, int timeout_ms, int *status, json_t **body,
                        char *err, size_t err_size);

/* Deletes every "*.ports" file in dir (stale ones a SIGKILLed server left). */
void gf_natsd_probe_clear_ports(const char *dir);

#endif
