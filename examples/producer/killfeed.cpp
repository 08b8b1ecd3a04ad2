// killfeed — a toy game server that publishes its gameplay events through the gamefn
// producer library (gamefn/producer.h), in C++. docs/EVENTS.md walks through it.
//
//   killfeed --source gs-eu-1 --spool /var/lib/killfeed/spool [--url nats://host:4222]
//            [--seconds 10] [--rate 200]
//
// Each "tick" of its game loop, some players kill each other, score, change zones;
// every 1,000 events a match ends (an event with no player: the server's own id); once
// it reports a crash. The loop never waits for NATS: emit only appends to the spool.
// Every second it prints the producer's counters and says what an operator should
// alert on. On exit (after --seconds, or SIGINT/SIGTERM) it waits up to 5 s for the
// acknowledgements; what is not acknowledged stays spooled and goes out at the next
// start. Exit status: 0 all acknowledged, 3 some still spooled, 1 the spool failed.
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "gamefn/producer.h"

namespace {

volatile std::sig_atomic_t stop_requested = 0;

void on_signal(int) { stop_requested = 1; }

// One producer for the whole process: open at start, close at exit.
class EventLog {
  public:
    explicit EventLog(const gf_producer_config &cfg) { err_ = gf_producer_open(&cfg, &p_); }
    ~EventLog() { gf_producer_close(p_, 0); }
    EventLog(const EventLog &) = delete;
    EventLog &operator=(const EventLog &) = delete;

    bool ok() const { return err_ == GF_OK; }
    gf_err open_error() const { return err_; }

    // Returns false only when the event was not accepted (the reason is printed).
    bool emit(const gf_event &ev) {
        gf_producer_receipt r;
        gf_err err = gf_producer_emit(p_, &ev, &r);
        if (err == GF_OK)
            return true;
        if (err == GF_ERR_INVALID) // a bug in the game: fix the event, never retry it
            std::fprintf(stderr, "killfeed: event refused: %s: %s\n", r.field, r.why);
        else if (err == GF_ERR_UNAVAILABLE) // spool full: this event is LOST (counted)
            std::fprintf(stderr, "killfeed: event dropped, spool full\n");
        else
            std::fprintf(stderr, "killfeed: spool failed: %s\n", r.why);
        return false;
    }

    gf_producer_stats stats() {
        gf_producer_stats st;
        gf_producer_stats_get(p_, &st);
        return st;
    }

    bool flush(int64_t ms) { return gf_producer_flush(p_, ms) == GF_OK; }

  private:
    gf_producer *p_ = nullptr;
    gf_err err_ = GF_OK;
};

void print_stats(const gf_producer_stats &st) {
    std::printf("source=%s produced=%llu acknowledged=%llu spooled=%llu replayed=%llu "
                "dropped=%llu state=%s%s%s\n",
                st.source_id, (unsigned long long)st.produced,
                (unsigned long long)st.acknowledged, (unsigned long long)st.spooled,
                (unsigned long long)st.replayed, (unsigned long long)st.dropped,
                gf_producer_state_str(st.state), st.reason[0] ? " reason=" : "", st.reason);
    // What to alert on (docs/EVENTS.md, "Counters and alerts").
    if (st.dropped > 0)
        std::printf("ALERT: %llu events lost: the spool is full\n",
                    (unsigned long long)st.dropped);
    if (st.state != GF_PRODUCER_OK && st.stopped_ms > 60000)
        std::printf("ALERT: not publishing for %lld s (%s)\n", (long long)(st.stopped_ms / 1000),
                    gf_producer_state_str(st.state));
    std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
    std::string url = "nats://127.0.0.1:4222", source = "killfeed-1", spool = "killfeed-spool";
    double seconds = 10, rate = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i];
        if (k == "--url")
            url = argv[i + 1];
        else if (k == "--source")
            source = argv[i + 1];
        else if (k == "--spool")
            spool = argv[i + 1];
        else if (k == "--seconds")
            seconds = std::atof(argv[i + 1]);
        else if (k == "--rate")
            rate = std::atof(argv[i + 1]);
        else {
            std::fprintf(stderr, "killfeed: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);

    gf_producer_config cfg;
    std::memset(&cfg, 0, sizeof cfg);
    cfg.source_id = source.c_str(); // this game server's id
    cfg.spool_dir = spool.c_str();  // its own directory, kept across restarts
    cfg.url = url.c_str();          // the producer owns and reconnects the connection
    cfg.fsync = GF_PRODUCER_FSYNC_INTERVAL; // a power loss may cost the last 100 ms
    EventLog log(cfg);
    if (!log.ok()) {
        std::fprintf(stderr, "killfeed: cannot open the event log: %s\n",
                     gf_err_str(log.open_error()));
        return 1;
    }

    std::mt19937 rng(42);
    const char *zones[] = {"harbour", "market", "tower", "docks"};
    auto start = std::chrono::steady_clock::now(), last_print = start;
    uint64_t n = 0;
    bool crashed = false;
    while (!stop_requested) {
        auto now = std::chrono::steady_clock::now();
        double elapsed = std::chrono::duration<double>(now - start).count();
        if (elapsed >= seconds)
            break;
        if (n >= elapsed * rate) { // the game loop's pace
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            continue;
        }
        std::string player = "p" + std::to_string(rng() % 50);
        std::string victim = "p" + std::to_string(rng() % 50);
        gf_event_attr attrs[] = {{"item", "medkit"}, {"rarity", "rare"}};
        gf_event ev;
        std::memset(&ev, 0, sizeof ev);
        ev.player_id = player.c_str();
        ev.match_id = "m-1";
        switch (n % 4) {
        case 0:
            ev.type = "kill";
            ev.kill.victim_player_id = victim.c_str();
            ev.kill.weapon = "rocket launcher";
            ev.kill.headshot = rng() % 4 == 0;
            ev.kill.distance_m = 12.5f;
            break;
        case 1:
            ev.type = "score";
            ev.score.delta = 10;
            ev.score.reason = "kill";
            break;
        case 2:
            ev.type = "zone_change";
            ev.zone_change.from_zone = zones[rng() % 4];
            ev.zone_change.to_zone = zones[rng() % 4];
            break;
        default:
            // A type of the game's own, with attributes: a generic payload.
            ev.type = "pickup";
            ev.generic.attributes = attrs;
            ev.generic.attributes_len = 2;
            break;
        }
        log.emit(ev); // copies everything: ev and its strings may go right after
        n++;
        if (n % 1000 == 0) { // match-level: no player, the server's own id is used
            gf_event end;
            std::memset(&end, 0, sizeof end);
            end.type = "match_end";
            end.match_id = "m-1";
            log.emit(end);
        }
        if (!crashed && elapsed > seconds / 2) {
            gf_event crash;
            std::memset(&crash, 0, sizeof crash);
            crash.type = "crash";
            crash.crash.signature = "0x7f3a-physics-step";
            crash.crash.message = "simulated: NaN in rigid body";
            crash.crash.stack = "physics_step\nworld_tick\nmain";
            crash.crash.build = "1.4.2";
            log.emit(crash);
            crashed = true;
        }
        if (now - last_print >= std::chrono::seconds(1)) {
            last_print = now;
            print_stats(log.stats());
        }
    }
    bool flushed = log.flush(5000);
    print_stats(log.stats());
    return flushed ? 0 : 3;
}
