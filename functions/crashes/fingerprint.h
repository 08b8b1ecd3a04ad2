/*
 * fingerprint.h — group crash reports by a fingerprint of the normalised stack.
 *
 * fingerprint = hex(BLAKE2b-128("gamefn-crash-v1\n" || frame 1 || "\n" || frame 2 ...))
 * over the top max_frames (default 8) normalised frames of the crashing thread, so
 * the same bug hit in another build, at other addresses, on another machine gives the
 * same 32 hex digits. A stack without a recognisable frame falls back to
 * BLAKE2b-128("gamefn-crash-sig-v1\n" || CrashEvent.signature); the prefixes keep the
 * two kinds apart.
 *
 * The crashing thread: a thread header ("Thread 7 (crashed)", "Thread 1 (Thread
 * 0x7f.. (LWP 42))", Android's "backtrace:") starts a section; the section whose
 * header says "crashed" wins, else the first with a "<signal handler called>" line,
 * else Android's first "backtrace:", else the first section with a frame (a plain
 * `bt`). Within it, the frames end at the first blank line after one was seen.
 *
 * Frames: lines starting with "#N" (gdb, lldb, Android), "frame #N" (lldb), "at "
 * (Java, .NET, Mono), a frame number followed by a module (Breakpad, WinDbg), or
 * holding "module!symbol" (Windows minidump style). Only if a section has none of
 * those, lines shaped "Name.Or:Method (..." count (Unity's Debug stacks).
 *
 * Normalisation of a frame, in order (documented here, tested in
 * test_fingerprint.c; changing it changes every fingerprint: bump the "v1"):
 *   1. drop the frame number and markers: "#12", "frame #3:", "* ", a leading
 *      decimal (or short hex with "!"/"`" in the line) number, then "at " and "pc ";
 *   2. drop "(BuildId: ...)" and every [...] group (IL offsets, Breakpad and WinDbg
 *      source info, generic argument lists); argument lists with values, i.e. a
 *      (...) group holding "=" (gdb, lldb), become "()"; <...> (templates,
 *      generics, Mono module ids) becomes "<>"; {...} (lambdas) becomes "{}";
 *   3. drop addresses: 0x... numbers, WinDbg's hex`hex, and words of 8 or more hex
 *      digits (Android pcs);
 *   4. drop offsets: "+" followed by a number ("abort+164", "+ 0x1a"), or left alone
 *      by step 3; "++" ("C++", "operator++") stays;
 *   5. drop line numbers: ":42", ":42:7", ":line 42", " line 42", "@ 42";
 *   6. paths become base names ("/home/ci/src/player.cpp" -> "player.cpp",
 *      "C:\src\a.cs" -> "a.cs");
 *   7. tidy: a leading "in ", a space before "(", runs of spaces; a frame is cut at
 *      256 bytes. Lines longer than 1024 bytes are cut before normalising.
 *
 * Pure and reentrant: no allocation, no state (libsodium is initialised once by
 * sodium_init, which is idempotent and thread-safe).
 */
#ifndef GAMEFN_FINGERPRINT_H
#define GAMEFN_FINGERPRINT_H

#include <stddef.h>

#include "gamefn/err.h"

enum {
    GF_FINGERPRINT_HEX_LEN = 32,
    GF_FINGERPRINT_FRAMES_DEFAULT = 8,
    GF_FINGERPRINT_FRAMES_MAX = 64,
    GF_FINGERPRINT_FRAME_MAX = 256,   /* bytes of one normalised frame */
    GF_FINGERPRINT_STACK_MAX = 32768, /* CrashEvent.stack */
    GF_FINGERPRINT_SIGNATURE_MAX = 128,
};

typedef struct gf_fingerprint {
    char hex[GF_FINGERPRINT_HEX_LEN + 1];
    unsigned frames; /* frames hashed; 0 = from the signature */
} gf_fingerprint;

/* max_frames: 1..64, 0 = default. GF_ERR_INVALID: stack longer than 32768 bytes,
 * or no frame and a signature not of 1..128 bytes. */
gf_err gf_fingerprint_compute(const char *stack, size_t stack_len, const char *signature,
                              size_t signature_len, unsigned max_frames, gf_fingerprint *out);

/* The normalised frames that compute hashes, each followed by '\n', into out (cut to
 * fit, always NUL-terminated); *frames = how many. For crash reports and debugging. */
gf_err gf_fingerprint_normalize(const char *stack, size_t stack_len, unsigned max_frames, char *out,
                                size_t size, unsigned *frames);

#endif
