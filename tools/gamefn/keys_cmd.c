/*
 * keys_cmd.c — `gamefn keygen` and `gamefn verify-token`: the join-token key pair, and
 * checking a token the way a game server does (docs/PROTOCOL.md §7).
 *
 *   gamefn keygen [--key-id ID] [--dir DIR]        writes DIR/ID.key (secret, mode 0600)
 *   gamefn keygen --secret FILE --public FILE      and DIR/ID.pub; refuses to overwrite
 *
 *   gamefn verify-token (--public-key FILE | --keys) (--token HEX | --token-file FILE)
 *                       [--server ID] [--player ID] [--now UNIX_MS]
 *     --public-key  the key file to verify with; --keys asks the fleet
 *                   (gamefn.v1.fleet.keys, over NATS from the config) for the current
 *                   keys, with their retirement times
 *     prints the claims and the verdict; exit 0 valid, 1 refused, 2 usage
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "cli.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/join_key.h"
#include "gamefn/join_token.h"
#include "gamefn/names.h"
#include "gamefn/subjects.h"
#include "gamefn/wire_error.h"
#include "join_sign.h"

/* "--name value" at argv[*i]; advances. */
static const char *flag(int argc, char **argv, int *i, const char *name)
{
    if (strcmp(argv[*i], name) != 0 || *i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

const char gf_cli_keygen_help[] =
    "usage: gamefn keygen [--key-id ID] [--dir DIR]\n"
    "       gamefn keygen --secret FILE --public FILE\n\n"
    "Makes an Ed25519 join-token key pair: DIR/ID.key (secret, mode 0600: the allocator's\n"
    "functions.allocator.signing_key) and DIR/ID.pub (functions.fleet.join_keys[].public_key).\n"
    "Refuses to overwrite a key. ID defaults to 'join', DIR to '.'.\n\n"
    "exit: 0 written, 1 a file exists or cannot be written, 2 usage\n";

const char gf_cli_verify_token_help[] =
    "usage: gamefn verify-token (--public-key FILE | --keys) (--token HEX | --token-file FILE)\n"
    "                           [--server ID] [--player ID] [--now UNIX_MS]\n\n"
    "Checks a join token the way a game server does (docs/PROTOCOL.md §7): signature,\n"
    "expiry, server, player; prints the claims and the verdict.\n\n"
    "  --public-key FILE  the key to verify with\n"
    "  --keys             ask the fleet (gamefn.v1.fleet.keys, NATS from the config) for\n"
    "                     the current keys, with their retirement times\n\n"
    "exit: 0 valid, 1 refused, 2 usage\n";

int gf_cli_keygen(int argc, char **argv)
{
    const char *key_id = "join", *dir = ".", *secret = NULL, *public = NULL, *v;
    for (int i = 1; i < argc; i++) {
        if ((v = flag(argc, argv, &i, "--key-id")))
            key_id = v;
        else if ((v = flag(argc, argv, &i, "--dir")))
            dir = v;
        else if ((v = flag(argc, argv, &i, "--secret")))
            secret = v;
        else if ((v = flag(argc, argv, &i, "--public")))
        public = v;
        else
        {
            fprintf(stderr, "usage: gamefn keygen [--key-id ID] [--dir DIR] | --secret FILE "
                            "--public FILE\n");
            return 2;
        }
    }
    char why[GF_NAME_WHY_MAX], sk_path[1024], pk_path[1024];
    if (!gf_name_id_ok(key_id, GF_WIRE_NAME_MAX, why, sizeof why)) {
        fprintf(stderr, "gamefn keygen: key id %s\n", why);
        return 2;
    }
    if ((secret == NULL) != (public == NULL)) {
        fprintf(stderr, "gamefn keygen: give both --secret and --public, or neither\n");
        return 2;
    }
    snprintf(sk_path, sizeof sk_path, "%s", secret ? secret : "");
    snprintf(pk_path, sizeof pk_path, "%s", public ? public : "");
    if (!secret) {
        snprintf(sk_path, sizeof sk_path, "%s/%s.key", dir, key_id);
        snprintf(pk_path, sizeof pk_path, "%s/%s.pub", dir, key_id);
    }
    uint8_t pk[GF_WIRE_JOIN_PK_LEN];
    gf_err err = gf_join_keygen(sk_path, pk_path, pk);
    if (err == GF_ERR_CONFLICT) {
        fprintf(stderr, "gamefn keygen: %s or %s exists; refusing to overwrite a key\n", sk_path,
                pk_path);
        return 1;
    }
    if (err != GF_OK) {
        fprintf(stderr, "gamefn keygen: cannot write %s / %s (%s)\n", sk_path, pk_path,
                gf_err_str(err));
        return 1;
    }
    char hex[2 * GF_WIRE_JOIN_PK_LEN + 1];
    sodium_bin2hex(hex, sizeof hex, pk, sizeof pk);
    printf("secret key  %s (mode 0600: the allocator's functions.allocator.signing_key)\n"
           "public key  %s (functions.fleet.join_keys[].public_key)\n"
           "key id      %s\n"
           "public      %s\n",
           sk_path, pk_path, key_id, hex);
    return 0;
}

/* The token from --token HEX or --token-file FILE (raw bytes); malloc'd. */
static uint8_t *read_token(const char *hex, const char *file, size_t *len)
{
    size_t cap = GF_WIRE_JOIN_CLAIMS_MAX + GF_WIRE_JOIN_SIG_LEN + 1;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return NULL;
    if (hex) {
        if (sodium_hex2bin(buf, cap, hex, strlen(hex), NULL, len, NULL) == 0)
            return buf;
    } else {
        FILE *f = fopen(file, "rb");
        if (f) {
            *len = fread(buf, 1, cap, f);
            fclose(f);
            return buf;
        }
    }
    free(buf);
    return NULL;
}

/* The fleet's current keys over NATS. Returns how many, -1 on failure. */
static int fetch_keys(const char *config_path, gf_join_key *keys, size_t max)
{
    gf_config *cfg = NULL;
    gf_config_error cerr;
    if (gf_config_load(config_path, NULL, &cfg, &cerr) != GF_OK) {
        fprintf(stderr, "gamefn verify-token: %s\n", cerr.message);
        return -1;
    }
    gf_conn *conn = NULL;
    int n = -1;
    natsMsg *reply = NULL;
    if (gf_conn_open(&cfg->nats, "gamefn-cli", NULL, 10000, &conn) == GF_OK &&
        natsConnection_Request(&reply, gf_conn_nats(conn), GF_WIRE_SUBJ_FLEET_KEYS, NULL, 0,
                               2000) == NATS_OK) {
        const char *code = NULL, *text = NULL;
        natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR_CODE, &code);
        natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR, &text);
        gf_wire_error e;
        const uint8_t *body = (const uint8_t *)natsMsg_GetData(reply);
        size_t body_len = (size_t)natsMsg_GetDataLength(reply);
        Gamefn__V1__FleetKeysReply *r = NULL;
        size_t got = 0;
        if (gf_wire_reply_check(code, text, body, body_len, &e) == GF_OK &&
            (r = gamefn__v1__fleet_keys_reply__unpack(NULL, body_len, body)) &&
            gf_join_keys_from_wire(r->join_keys, r->n_join_keys, keys, max, &got) == GF_OK)
            n = (int)got;
        gamefn__v1__fleet_keys_reply__free_unpacked(r, NULL);
    }
    if (n < 0)
        fprintf(stderr, "gamefn verify-token: no answer from gamefn.v1.fleet.keys (is the fleet "
                        "function running?)\n");
    natsMsg_Destroy(reply);
    gf_conn_close(conn, 1000);
    gf_config_free(cfg);
    return n;
}

static void print_claims(const Gamefn__V1__JoinTokenClaims *c)
{
    char nonce[2 * GF_WIRE_JOIN_NONCE_LEN + 1] = "";
    if (c->nonce.len <= GF_WIRE_JOIN_NONCE_LEN)
        sodium_bin2hex(nonce, sizeof nonce, c->nonce.data, c->nonce.len);
    printf("key_id      %s\nmatch_id    %s\nticket_id   %s\nplayer_id   %s\nserver_id   %s\n"
           "datacenter  %s\naddress     %s:%u\nteam        %u\nissued      %lld\n"
           "expires     %lld\nnonce       %s\n",
           c->key_id, c->match_id, c->ticket_id, c->player_id, c->server_id, c->datacenter,
           c->address, c->port, c->team, (long long)c->issued_unix_ms,
           (long long)c->expires_unix_ms, nonce);
}

int gf_cli_verify_token(const char *config_path, int argc, char **argv)
{
    const char *pk_file = NULL, *hex = NULL, *file = NULL, *server = NULL, *player = NULL, *v;
    bool from_fleet = false;
    int64_t now = gf_clock_unix_ms();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--keys") == 0)
            from_fleet = true;
        else if ((v = flag(argc, argv, &i, "--public-key")))
            pk_file = v;
        else if ((v = flag(argc, argv, &i, "--token")))
            hex = v;
        else if ((v = flag(argc, argv, &i, "--token-file")))
            file = v;
        else if ((v = flag(argc, argv, &i, "--server")))
            server = v;
        else if ((v = flag(argc, argv, &i, "--player")))
            player = v;
        else if ((v = flag(argc, argv, &i, "--now")))
            now = strtoll(v, NULL, 10);
        else
            goto usage;
    }
    if ((pk_file != NULL) == from_fleet || (hex != NULL) == (file != NULL))
        goto usage;

    gf_join_key keys[8] = {0};
    size_t n_keys = 1;
    char why[512];
    if (from_fleet) {
        int n = fetch_keys(config_path, keys, 8);
        if (n <= 0)
            return 1;
        n_keys = (size_t)n;
    } else if (gf_join_key_read(pk_file, false, keys[0].pk, why, sizeof why) != GF_OK) {
        fprintf(stderr, "gamefn verify-token: %s\n", why);
        return 2;
    }
    size_t len = 0;
    uint8_t *token = read_token(hex, file, &len);
    if (!token) {
        fprintf(stderr, "gamefn verify-token: cannot read the token (hex, or a file of bytes)\n");
        return 2;
    }
    printf("length      %zu bytes (claims %zu + signature %d)\n", len,
           len > GF_WIRE_JOIN_SIG_LEN ? len - GF_WIRE_JOIN_SIG_LEN : 0, GF_WIRE_JOIN_SIG_LEN);
    Gamefn__V1__JoinTokenClaims *c = NULL;
    size_t used = 0;
    gf_err err = gf_join_token_verify_keys(token, len, keys, n_keys, now, GF_WIRE_JOIN_SKEW_MS,
                                           server, player, &c, &used);
    for (size_t k = 0; !c && (err == GF_ERR_PERMANENT || err == GF_ERR_CONFLICT) && k < n_keys;
         k++) {
        /* The signature held: show what it claims, and why it is refused. */
        const uint8_t *claims = NULL;
        size_t claims_len = 0;
        if (gf_join_token_open(token, len, keys[k].pk, &claims, &claims_len) == GF_OK)
            c = gamefn__v1__join_token_claims__unpack(NULL, claims_len, claims);
    }
    if (c)
        print_claims(c);
    const char *verdict = err == GF_OK              ? "valid"
                          : err == GF_ERR_PERMANENT ? "refused: outside its time window (issued "
                                                      "- skew .. expires + skew) or key retired"
                          : err == GF_ERR_CONFLICT  ? "refused: issued for another server or player"
                                                    : "refused: bad signature or malformed token";
    printf("verdict     %s\n", verdict);
    gf_join_token_claims_free(c);
    free(token);
    return err == GF_OK ? 0 : 1;
usage:
    fprintf(stderr, "usage: gamefn verify-token (--public-key FILE | --keys) (--token HEX | "
                    "--token-file FILE) [--server ID] [--player ID] [--now UNIX_MS]\n");
    return 2;
}
