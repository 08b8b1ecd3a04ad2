/* check_print.c — see check_print.h. */
#include <stdio.h>
#include <string.h>

#include "check_print.h"
#include "cli.h"
#include "gamefn/clock.h"

json_t *gf_check_report_json(const gf_check_report *r, const gf_check_params *p, const char *notes)
{
    char at[GF_CLOCK_RFC3339_MAX];
    json_t *inv = json_array(), *skipped = json_array();
    for (size_t i = 0; i < r->counts_len; i++) {
        const gf_check_count *n = &r->counts[i];
        if (!n->checked) {
            json_array_append_new(skipped, json_pack("{s:s, s:s, s:s}", "name", n->name, "why",
                                                     n->detail, "explanation", n->explanation));
            continue;
        }
        json_t *ex = json_array();
        for (size_t e = 0; e < n->examples_len; e++)
            json_array_append_new(ex, json_string(n->examples[e]));
        json_array_append_new(inv,
                              json_pack("{s:s, s:I, s:s, s:s, s:o, s:b}", "name", n->name, "count",
                                        (json_int_t)n->count, "detail", n->detail, "explanation",
                                        n->explanation, "examples", ex, "required", n->required));
    }
    const gf_check_totals *t = &r->totals;
    json_t *totals = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "tickets",
        (json_int_t)t->tickets, "ticket_revisions", (json_int_t)t->ticket_revisions,
        "tickets_skipped", (json_int_t)t->tickets_skipped, "matches_committed",
        (json_int_t)t->matches_committed, "matches_aborted", (json_int_t)t->matches_aborted,
        "players", (json_int_t)t->players, "player_revisions", (json_int_t)t->player_revisions,
        "events", (json_int_t)t->events, "event_sources", (json_int_t)t->event_sources,
        "events_logged", (json_int_t)t->events_logged, "score_events", (json_int_t)t->score_events,
        "dead_letters", (json_int_t)t->dead_letters, "boards", (json_int_t)t->boards, "scores",
        (json_int_t)t->scores, "limits_unchecked", (json_int_t)t->limits_unchecked);
    json_object_set_new(totals, "events_malformed", json_integer((json_int_t)t->events_malformed));
    json_object_set_new(totals, "scores_before_since",
                        json_integer((json_int_t)t->scores_before_since));
    return json_pack("{s:i, s:s, s:I, s:I, s:o, s:o, s:o, s:s, s:I}", "format", 1, "checked_at",
                     gf_clock_rfc3339(p->now_ms * 1000000, 3, at, sizeof at), "since_unix_ms",
                     (json_int_t)p->since_ms, "grace_ms", (json_int_t)p->grace_ms, "invariants",
                     inv, "not_checked", skipped, "totals", totals, "notes", notes ? notes : "",
                     "broken", (json_int_t)gf_check_report_broken(r));
}

static bool write_whole(const char *path, json_t *j)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return false;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return false;
    bool ok = json_dumpf(j, f, JSON_INDENT(2)) == 0 && fputc('\n', f) != EOF;
    ok &= fclose(f) == 0;
    if (ok && rename(tmp, path) == 0)
        return true;
    remove(tmp);
    return false;
}

static void print_text(const gf_check_report *r, const gf_check_params *p, const char *notes)
{
    const gf_check_totals *t = &r->totals;
    char at[GF_CLOCK_RFC3339_MAX], a[32], b[32], c[32], d[32], e[32];
    printf("gamefn check at %s: %s tickets (%s revisions), %s matches committed and %s aborted, "
           "%s players",
           gf_clock_rfc3339(p->now_ms * 1000000, 3, at, sizeof at),
           gf_cli_thousands(t->tickets, a, sizeof a),
           gf_cli_thousands(t->ticket_revisions, b, sizeof b),
           gf_cli_thousands(t->matches_committed, c, sizeof c),
           gf_cli_thousands(t->matches_aborted, d, sizeof d),
           gf_cli_thousands(t->players, e, sizeof e));
    if (t->tickets_skipped)
        printf(" (%s tickets created before --since left out)",
               gf_cli_thousands(t->tickets_skipped, a, sizeof a));
    printf("; %s events from %s sources", gf_cli_thousands(t->events, a, sizeof a),
           gf_cli_thousands(t->event_sources, b, sizeof b));
    if (t->boards)
        printf(", %s scores on %s boards", gf_cli_thousands(t->scores, a, sizeof a),
               gf_cli_thousands(t->boards, b, sizeof b));
    printf("\n\n");
    for (size_t i = 0; i < r->counts_len; i++) {
        const gf_check_count *n = &r->counts[i];
        if (!n->checked) {
            printf("  %-28s  -  not checked: %s\n", n->name, n->detail);
            continue;
        }
        printf("  %-28s %3s  %s\n", n->name, gf_cli_thousands(n->count, a, sizeof a),
               n->explanation);
        if (n->detail[0])
            printf("  %-28s      %s\n", "", n->detail);
        for (size_t k = 0; k < n->examples_len; k++)
            printf("  %-28s      e.g. %s\n", "", n->examples[k]);
    }
    if (notes && notes[0])
        printf("\nnotes: %s\n", notes);
    uint64_t broken = 0, unchecked = 0;
    for (size_t i = 0; i < r->counts_len; i++) {
        broken += r->counts[i].checked && r->counts[i].count;
        unchecked += !r->counts[i].checked;
    }
    if (broken == 0) {
        printf("\nresult: every checked invariant holds (%llu not checked)\n",
               (unsigned long long)unchecked);
        return;
    }
    printf("\nresult: %llu broken:", (unsigned long long)broken);
    for (size_t i = 0; i < r->counts_len; i++) {
        if (r->counts[i].checked && r->counts[i].count)
            printf(" %s %llu", r->counts[i].name, (unsigned long long)r->counts[i].count);
    }
    printf(" (exit 1)\n");
}

int gf_check_print(const gf_check_report *r, const gf_check_params *p, const char *notes, bool json,
                   const char *out)
{
    int rc = gf_check_report_broken(r) ? GF_CLI_VIOLATIONS : GF_CLI_OK;
    json_t *j = json || out ? gf_check_report_json(r, p, notes) : NULL;
    if (out && (!j || !write_whole(out, j))) {
        fprintf(stderr, "gamefn check: cannot write %s\n", out);
        rc = GF_CLI_FAILED;
    }
    if (json)
        gf_cli_json_print(json_incref(j), false);
    else
        print_text(r, p, notes);
    json_decref(j);
    return rc;
}
