/*
 * endpoint.c — stopping any kind of endpoint within the drain deadline.
 */
#include "function/fn_internal.h"

/* Joins the endpoint's thread if it finished before the deadline. A thread still
 * running at the deadline is left behind (the process is about to exit; its
 * un-acked messages are redelivered by JetStream). */
static bool join_thread(gf_endpoint_run *run, int64_t deadline_ms)
{
    if (!run->thread_started)
        return true;
    while (!atomic_load(&run->thread_done) && gf_now_mono_ms() < deadline_ms)
        gf_sleep_ms(10);
    if (!atomic_load(&run->thread_done))
        return false;
    pthread_join(run->thread, NULL);
    run->thread_started = false;
    return true;
}

bool gf_endpoint_stop(gf_endpoint_run *run, int64_t deadline_ms)
{
    bool clean = true;
    switch (run->ep->kind) {
    case GF_ENDPOINT_REQUEST:
        clean = gf_endpoint_drain_subscription(run, deadline_ms);
        break;
    case GF_ENDPOINT_PULL:
        clean = join_thread(run, deadline_ms);
        break;
    case GF_ENDPOINT_TICK:
        clean = join_thread(run, deadline_ms);
        clean = gf_endpoint_drain_subscription(run, deadline_ms) && clean;
        if (clean)
            kvStore_Destroy(run->lease_kv);
        run->lease_kv = NULL;
        break;
    }
    return clean;
}
