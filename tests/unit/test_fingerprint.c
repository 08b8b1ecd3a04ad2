/* Crash fingerprints: the normalisation rules line by line, and realistic stacks
 * (gdb, lldb, Breakpad, WinDbg / Visual Studio, Unity, .NET, Android native and Java)
 * of the same bug in different builds agreeing, and of different bugs not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fingerprint.h"

static gf_fingerprint fp(const char *stack)
{
    gf_fingerprint f;
    assert_int_equal(gf_fingerprint_compute(stack, strlen(stack), "sig", 3, 0, &f), GF_OK);
    assert_int_equal(strlen(f.hex), 32);
    return f;
}

static void same(const char *a, const char *b)
{
    gf_fingerprint x = fp(a), y = fp(b);
    assert_true(x.frames > 0);
    assert_int_equal(x.frames, y.frames);
    assert_string_equal(x.hex, y.hex);
}

static void differ(const char *a, const char *b)
{
    gf_fingerprint x = fp(a), y = fp(b);
    assert_string_not_equal(x.hex, y.hex);
}

/* The first normalised frame of a one-line stack. */
static void norm(const char *line, const char *want)
{
    char out[512];
    unsigned n = 0;
    assert_int_equal(gf_fingerprint_normalize(line, strlen(line), 1, out, sizeof out, &n), GF_OK);
    assert_int_equal(n, 1);
    size_t len = strlen(out);
    assert_true(len > 0 && out[len - 1] == '\n');
    out[len - 1] = '\0';
    assert_string_equal(out, want);
}

static void normalisation_rules(void **state)
{
    norm("#2  0x000055d0c1a2b3c4 in Inventory::addItem (this=0x55d0c2e4f2a0, item=0x0) at "
         "/home/build/game/src/inventory.cpp:142",
         "Inventory::addItem() at inventory.cpp");
    norm("#0  __GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:50",
         "__GI_raise() at raise.c");
    norm("#3  0x000055d0c1a2c1f0 in std::vector<Item, std::allocator<Item> >::push_back(Item "
         "const&) (this=0x7ffd5a2b8c00, __x=...) at /usr/include/c++/12/bits/stl_vector.h:1189",
         "std::vector<>::push_back(Item const&)() at stl_vector.h");
    norm("#7  0x00007f1c3a1b2e5d in __lll_lock_wait () from /lib/x86_64-linux-gnu/libc.so.6",
         "__lll_lock_wait() from libc.so.6");
    norm("* frame #0: 0x0000000100003f54 game`Player::update(this=0x0000600000c04000, dt=0.016) "
         "at player.cpp:42:5",
         "game`Player::update() at player.cpp");
    norm(" 0  game.exe!Player::Update(float) [player.cpp : 120 + 0x5]",
         "game.exe!Player::Update(float)");
    norm(" 3  libc.so.6 + 0x3bcd5", "libc.so.6");
    norm("0a 000000a1`2b3ff6b0 00007ff6`4a1b2c3d game!Player::Update+0x2d "
         "[C:\\build\\src\\player.cpp @ 120]",
         "game!Player::Update");
    norm("game.exe!Player::Update(float dt) Line 120\tC++",
         "game.exe!Player::Update(float dt) C++");
    norm("  at PlayerController.Update () [0x0001a] in <4a1b2c3d5e6f47a8b9c0d1e2f3a4b5c6>:0",
         "PlayerController.Update() in <>");
    norm("   at Game.Inventory.AddItem(Item item) in C:\\build\\Game\\Inventory.cs:line 42",
         "Game.Inventory.AddItem(Item item) in Inventory.cs");
    norm("PlayerController:Update () (at Assets/Scripts/PlayerController.cs:42)",
         "PlayerController:Update()(at PlayerController.cs)");
    norm("      #03 pc 00000000001a2b3c  /data/app/~~Xk2==/com.game-Yq9==/lib/arm64/libgame.so "
         "(Player::update(float)+60) (BuildId: 0123456789abcdef0123456789abcdef)",
         "libgame.so(Player::update(float))");
    norm("\tat com.game.Player.update(Player.java:42)", "com.game.Player.update(Player.java)");
    norm("#4  0x0000555555555189 in std::function<void ()>::operator()() const (this=0x7ffe) at "
         "/usr/include/c++/12/bits/std_function.h:591",
         "std::function<>::operator()() const() at std_function.h");
    norm("#5  0x0000555555555189 in main::{lambda(int)#1}::operator()(int) const (__closure=0x1, "
         "x=3) at main.cpp:9",
         "main::{}::operator()(int) const() at main.cpp");
}

/* ---- gdb ------------------------------------------------------------------------ */

static const char gdb_a[] =
    "#0  __GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:50\n"
    "#1  0x00007f1c3a3f3859 in __GI_abort () at abort.c:79\n"
    "#2  0x000055d0c1a2b3c4 in Inventory::addItem (this=0x55d0c2e4f2a0, item=0x0) at "
    "/home/build/game/src/inventory.cpp:142\n"
    "#3  0x000055d0c1a2d5e8 in Player::pickUp (this=0x55d0c2e4f000, id=17) at "
    "/home/build/game/src/player.cpp:88\n"
    "#4  0x000055d0c1a11a00 in World::tick (this=0x55d0c2e40000, dt=0.0166) at "
    "/home/build/game/src/world.cpp:301\n"
    "#5  0x000055d0c1a10f00 in main (argc=1, argv=0x7ffd5a2b8c18) at "
    "/home/build/game/src/main.cpp:20\n";

/* The same bug, another build and machine: other addresses, paths, lines, values. */
static const char gdb_b[] =
    "#0  __GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:51\n"
    "#1  0x00007f88aa0f1859 in __GI_abort () at abort.c:79\n"
    "#2  0x0000562a00b1c004 in Inventory::addItem (this=0x562a01f00010, item=0x0) at "
    "/builds/ci-4711/game/src/inventory.cpp:150\n"
    "#3  0x0000562a00b1e228 in Player::pickUp (this=0x562a01f00000, id=3) at "
    "/builds/ci-4711/game/src/player.cpp:91\n"
    "#4  0x0000562a00b02a00 in World::tick (this=0x562a01e00000, dt=0.0333) at "
    "/builds/ci-4711/game/src/world.cpp:305\n"
    "#5  0x0000562a00b01f00 in main (argc=3, argv=0x7ffc11223344) at "
    "/builds/ci-4711/game/src/main.cpp:20\n";

/* Another bug: the crash is in removeItem. */
static const char gdb_other[] =
    "#0  __GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:50\n"
    "#1  0x00007f1c3a3f3859 in __GI_abort () at abort.c:79\n"
    "#2  0x000055d0c1a2b9f0 in Inventory::removeItem (this=0x55d0c2e4f2a0, slot=4) at "
    "/home/build/game/src/inventory.cpp:190\n"
    "#3  0x000055d0c1a2d5e8 in Player::drop (this=0x55d0c2e4f000, id=17) at "
    "/home/build/game/src/player.cpp:120\n"
    "#4  0x000055d0c1a11a00 in World::tick (this=0x55d0c2e40000, dt=0.0166) at "
    "/home/build/game/src/world.cpp:301\n";

/* `thread apply all bt`: the crashing thread is the one with the signal frame. */
static const char gdb_all[] =
    "\n"
    "Thread 3 (Thread 0x7f1c2b7fe700 (LWP 4242)):\n"
    "#0  0x00007f1c3a1b2e5d in __lll_lock_wait () from /lib/x86_64-linux-gnu/libc.so.6\n"
    "#1  0x00007f1c3a1ab0a3 in pthread_mutex_lock () from /lib/x86_64-linux-gnu/libc.so.6\n"
    "#2  0x000055d0c1a30000 in AudioMixer::run (this=0x55d0c2f00000) at src/audio.cpp:77\n"
    "\n"
    "Thread 1 (Thread 0x7f1c3b9c1740 (LWP 4240)):\n"
    "#0  __GI_raise (sig=sig@entry=11) at ../sysdeps/unix/sysv/linux/raise.c:50\n"
    "#1  <signal handler called>\n"
    "#2  0x000055d0c1a2b3c4 in Inventory::addItem (this=0x55d0c2e4f2a0, item=0x0) at "
    "/home/build/game/src/inventory.cpp:142\n"
    "#3  0x000055d0c1a2d5e8 in Player::pickUp (this=0x55d0c2e4f000, id=17) at "
    "/home/build/game/src/player.cpp:88\n";

static const char gdb_all_bt[] =
    "#0  __GI_raise (sig=sig@entry=11) at ../sysdeps/unix/sysv/linux/raise.c:50\n"
    "#1  <signal handler called>\n"
    "#2  0x0000562a00b1c004 in Inventory::addItem (this=0x562a01f00010, item=0x0) at "
    "/builds/ci-4711/game/src/inventory.cpp:150\n"
    "#3  0x0000562a00b1e228 in Player::pickUp (this=0x562a01f00000, id=3) at "
    "/builds/ci-4711/game/src/player.cpp:91\n";

static void gdb_stacks(void **state)
{
    same(gdb_a, gdb_b);
    differ(gdb_a, gdb_other);
    same(gdb_all, gdb_all_bt); /* picked out of all threads == a plain bt of it */
    differ(gdb_all, gdb_a);
    assert_int_equal(fp(gdb_a).frames, 6);
}

/* ---- Breakpad (minidump_stackwalk) ----------------------------------------------- */

static const char breakpad_a[] = "Operating system: Windows NT\n"
                                 "Crash reason:  EXCEPTION_ACCESS_VIOLATION_READ\n"
                                 "Crash address: 0x10\n"
                                 "\n"
                                 "Thread 2 (crashed)\n"
                                 " 0  game.exe!Inventory::addItem(Item *) [inventory.cpp : 142 + "
                                 "0x5]\n"
                                 "    rax = 0x0000000000000000   rdx = 0x000000a12b3ff6b0\n"
                                 "    Found by: given as instruction pointer in context\n"
                                 " 1  game.exe!Player::pickUp(int) [player.cpp : 88 + 0x11]\n"
                                 "    rsp = 0x000000a12b3ff700   rip = 0x00007ff64a1b2c3d\n"
                                 "    Found by: call frame info\n"
                                 " 2  game.exe!World::tick(float) [world.cpp : 301 + 0x9]\n"
                                 " 3  kernel32.dll + 0x17034\n"
                                 "\n"
                                 "Thread 0\n"
                                 " 0  ntdll.dll + 0x9d1e4\n"
                                 " 1  game.exe!main [main.cpp : 20 + 0x0]\n";

static const char breakpad_b[] = "Operating system: Windows NT\n"
                                 "Crash reason:  EXCEPTION_ACCESS_VIOLATION_READ\n"
                                 "Crash address: 0x18\n"
                                 "\n"
                                 "Thread 0\n"
                                 " 0  ntdll.dll + 0x9f004\n"
                                 "\n"
                                 "Thread 5 (crashed)\n"
                                 " 0  game.exe!Inventory::addItem(Item *) [inventory.cpp : 150 + "
                                 "0x9]\n"
                                 "    rax = 0x0000000000000000   rdx = 0x000000ff00aa1000\n"
                                 "    Found by: given as instruction pointer in context\n"
                                 " 1  game.exe!Player::pickUp(int) [player.cpp : 91 + 0x11]\n"
                                 " 2  game.exe!World::tick(float) [world.cpp : 305 + 0x9]\n"
                                 " 3  kernel32.dll + 0x17a44\n";

static const char windbg[] = " # Child-SP          RetAddr               Call Site\n"
                             "00 000000a1`2b3ff6b0 00007ff6`4a1b2c3d game!Inventory::addItem+0x2d "
                             "[C:\\build\\src\\inventory.cpp @ 142]\n"
                             "01 000000a1`2b3ff700 00007ff6`4a1b9000 game!Player::pickUp+0x11 "
                             "[C:\\build\\src\\player.cpp @ 88]\n"
                             "02 000000a1`2b3ff760 00007ffb`1c2d4f69 game!World::tick+0x9\n";

static const char windbg_b[] =
    "00 00000077`00aa1000 00007ff7`11aa2200 game!Inventory::addItem+0x31 "
    "[D:\\ci\\7\\src\\inventory.cpp @ 150]\n"
    "01 00000077`00aa1050 00007ff7`11aa9999 game!Player::pickUp+0x11 "
    "[D:\\ci\\7\\src\\player.cpp @ 91]\n"
    "02 00000077`00aa10b0 00007ffb`1c2d5000 game!World::tick+0x9\n";

static const char visual_studio[] = "game.exe!Inventory::addItem(Item * item) Line 142\tC++\n"
                                    "game.exe!Player::pickUp(int id) Line 88\tC++\n"
                                    "game.exe!World::tick(float dt) Line 301\tC++\n"
                                    "kernel32.dll!00007ffb1c2d4f69()\tUnknown\n";

static const char visual_studio_b[] = "game.exe!Inventory::addItem(Item * item) Line 150\tC++\n"
                                      "game.exe!Player::pickUp(int id) Line 91\tC++\n"
                                      "game.exe!World::tick(float dt) Line 305\tC++\n"
                                      "kernel32.dll!00007ffb1c2e0000()\tUnknown\n";

static void windows_stacks(void **state)
{
    same(breakpad_a, breakpad_b); /* the crashed thread, wherever it is listed */
    assert_int_equal(fp(breakpad_a).frames, 4);
    same(windbg, windbg_b);
    same(visual_studio, visual_studio_b);
    differ(breakpad_a, windbg);
}

/* ---- Unity / C# -------------------------------------------------------------------- */

static const char unity_player[] =
    "NullReferenceException: Object reference not set to an instance of an object\n"
    "  at PlayerController.Update () [0x0001a] in <4a1b2c3d5e6f47a8b9c0d1e2f3a4b5c6>:0 \n"
    "  at Inventory.Add (Item item) [0x00003] in <4a1b2c3d5e6f47a8b9c0d1e2f3a4b5c6>:0 \n";

static const char unity_player_b[] =
    "NullReferenceException: Object reference not set to an instance of an object\n"
    "  at PlayerController.Update () [0x00022] in <99ffeeddccbbaa998877665544332211>:0 \n"
    "  at Inventory.Add (Item item) [0x00003] in <99ffeeddccbbaa998877665544332211>:0 \n";

static const char unity_editor[] = "NullReferenceException: Object reference not set\n"
                                   "PlayerController.Update () (at "
                                   "Assets/Scripts/PlayerController.cs:42)\n"
                                   "UnityEngine.Debug:LogException (System.Exception)\n";

static const char unity_editor_b[] = "NullReferenceException: Object reference not set\n"
                                     "PlayerController.Update () (at "
                                     "Assets/Scripts/PlayerController.cs:57)\n"
                                     "UnityEngine.Debug:LogException (System.Exception)\n";

static const char dotnet[] = "System.InvalidOperationException: Collection was modified.\n"
                             "   at System.Collections.Generic.List`1.Enumerator.MoveNext()\n"
                             "   at Game.Inventory.Sort(Item[] items) in "
                             "C:\\build\\Game\\Inventory.cs:line 42\n"
                             "   at Game.Player.Tick() in C:\\build\\Game\\Player.cs:line 17\n";

static const char dotnet_b[] = "System.InvalidOperationException: Collection was modified.\n"
                               "   at System.Collections.Generic.List`1.Enumerator.MoveNext()\n"
                               "   at Game.Inventory.Sort(Item[] items) in "
                               "/home/ci/Game/Inventory.cs:line 44\n"
                               "   at Game.Player.Tick() in /home/ci/Game/Player.cs:line 17\n";

static void managed_stacks(void **state)
{
    same(unity_player, unity_player_b);
    same(unity_editor, unity_editor_b);
    assert_int_equal(fp(unity_editor).frames, 2); /* the message line is no frame */
    same(dotnet, dotnet_b);
    differ(unity_player, unity_editor);
}

/* ---- Android ------------------------------------------------------------------------ */

static const char tombstone_a[] =
    "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\n"
    "Build fingerprint: 'google/raven/raven:13/TQ1A.230105.002/9325679:user/release-keys'\n"
    "pid: 4321, tid: 4388, name: GameThread  >>> com.game <<<\n"
    "signal 6 (SIGABRT), code -1 (SI_QUEUE), fault addr --------\n"
    "Abort message: 'inventory full!'\n"
    "    x0  0000000000000000  x1  0000000000001124  x2  0000000000000006\n"
    "\n"
    "backtrace:\n"
    "      #00 pc 000000000004e9c4  /apex/com.android.runtime/lib64/bionic/libc.so "
    "(abort+164) (BuildId: 7e4ab2c3f1d09e8a)\n"
    "      #01 pc 00000000001a2b3c  /data/app/~~Xk2abQ==/com.game-Yq9zzT==/lib/arm64/"
    "libgame.so (Inventory::addItem(Item*)+60) (BuildId: 0123456789abcdef)\n"
    "      #02 pc 00000000001a3000  /data/app/~~Xk2abQ==/com.game-Yq9zzT==/lib/arm64/"
    "libgame.so (Player::pickUp(int)+112) (BuildId: 0123456789abcdef)\n"
    "\n"
    "memory near x1:\n"
    "    0000007fc0a1b2c0 0000000000000000 0000000000000000  ................\n"
    "--- --- --- --- --- --- --- --- --- --- --- --- --- --- --- ---\n"
    "pid: 4321, tid: 4390, name: RenderThread  >>> com.game <<<\n"
    "backtrace:\n"
    "      #00 pc 00000000000a1b2c  /apex/com.android.runtime/lib64/bionic/libc.so "
    "(__ioctl+4) (BuildId: 7e4ab2c3f1d09e8a)\n";

static const char tombstone_b[] =
    "pid: 999, tid: 1002, name: GameThread  >>> com.game <<<\n"
    "signal 6 (SIGABRT), code -1 (SI_QUEUE), fault addr --------\n"
    "backtrace:\n"
    "      #00 pc 000000000004f004  /apex/com.android.runtime/lib64/bionic/libc.so "
    "(abort+168) (BuildId: 99aa00bb11cc22dd)\n"
    "      #01 pc 00000000001b0000  /data/app/~~Pp0ooO==/com.game-Zz11aa==/lib/arm64/"
    "libgame.so (Inventory::addItem(Item*)+64) (BuildId: fedcba9876543210)\n"
    "      #02 pc 00000000001b1111  /data/app/~~Pp0ooO==/com.game-Zz11aa==/lib/arm64/"
    "libgame.so (Player::pickUp(int)+112) (BuildId: fedcba9876543210)\n";

static const char android_java[] = "java.lang.IllegalStateException: inventory full\n"
                                   "\tat com.game.Inventory.add(Inventory.java:42)\n"
                                   "\tat com.game.Player.pickUp(Player.java:88)\n"
                                   "\tat android.os.Handler.handleCallback(Handler.java:942)\n";

static const char android_java_b[] = "java.lang.IllegalStateException: inventory full\n"
                                     "\tat com.game.Inventory.add(Inventory.java:45)\n"
                                     "\tat com.game.Player.pickUp(Player.java:90)\n"
                                     "\tat android.os.Handler.handleCallback(Handler.java:938)\n";

static void android_stacks(void **state)
{
    same(tombstone_a, tombstone_b);
    assert_int_equal(fp(tombstone_a).frames, 3); /* not the RenderThread's */
    same(android_java, android_java_b);
    differ(tombstone_a, android_java);
}

/* ---- the rest ------------------------------------------------------------------------ */

static void frame_limit(void **state)
{
    /* Differ only below frame 8: same with the default N, different with N = 16. */
    char a[4096] = "", b[4096] = "";
    for (int i = 0; i < 12; i++) {
        char line[128];
        snprintf(line, sizeof line, "#%d  0x%x in f%d () at f.c:%d\n", i, 0x1000 + i, i, i);
        strcat(a, line);
        snprintf(line, sizeof line, "#%d  0x%x in %s%d () at f.c:%d\n", i, 0x2000 + i,
                 i < 8 ? "f" : "g", i, i);
        strcat(b, line);
    }
    same(a, b);
    gf_fingerprint x, y;
    assert_int_equal(gf_fingerprint_compute(a, strlen(a), "s", 1, 16, &x), GF_OK);
    assert_int_equal(gf_fingerprint_compute(b, strlen(b), "s", 1, 16, &y), GF_OK);
    assert_int_equal(x.frames, 12);
    assert_string_not_equal(x.hex, y.hex);
    assert_int_equal(gf_fingerprint_compute(a, strlen(a), "s", 1, 65, &x), GF_ERR_INVALID);
}

static void signature_fallback(void **state)
{
    gf_fingerprint x, y, z;
    assert_int_equal(gf_fingerprint_compute("", 0, "EXC_BAD_ACCESS@Foo", 18, 0, &x), GF_OK);
    assert_int_equal(x.frames, 0);
    assert_int_equal(gf_fingerprint_compute(NULL, 0, "EXC_BAD_ACCESS@Foo", 18, 0, &y), GF_OK);
    assert_string_equal(x.hex, y.hex);
    const char *noise = "Segmentation fault\n\n   \nno frames here\n";
    assert_int_equal(gf_fingerprint_compute(noise, strlen(noise), "EXC_BAD_ACCESS@Foo", 18, 0, &z),
                     GF_OK);
    assert_string_equal(x.hex, z.hex);
    assert_int_equal(gf_fingerprint_compute("", 0, "other", 5, 0, &y), GF_OK);
    assert_string_not_equal(x.hex, y.hex);
    assert_int_equal(gf_fingerprint_compute("", 0, "", 0, 0, &y), GF_ERR_INVALID);
    assert_int_equal(gf_fingerprint_compute("", 0, NULL, 0, 0, &y), GF_ERR_INVALID);
    char big[200];
    memset(big, 'a', sizeof big);
    assert_int_equal(gf_fingerprint_compute("", 0, big, 129, 0, &y), GF_ERR_INVALID);
    /* A frame whose text is the signature still hashes differently from it. */
    assert_int_equal(gf_fingerprint_compute("#0 foo ()", 9, "foo()", 5, 0, &y), GF_OK);
    assert_int_equal(gf_fingerprint_compute("", 0, "foo()", 5, 0, &z), GF_OK);
    assert_string_not_equal(y.hex, z.hex);
}

static void limits_and_garbage(void **state)
{
    gf_fingerprint f;
    char *s = malloc(GF_FINGERPRINT_STACK_MAX + 1);
    assert_non_null(s);
    for (size_t i = 0; i <= GF_FINGERPRINT_STACK_MAX; i++)
        s[i] = i % 50 == 49 ? '\n' : "#0 (<[{x+:@/\\0x1f`}]>)= "[i % 25];
    assert_int_equal(gf_fingerprint_compute(s, GF_FINGERPRINT_STACK_MAX, "s", 1, 64, &f), GF_OK);
    assert_int_equal(gf_fingerprint_compute(s, GF_FINGERPRINT_STACK_MAX + 1, "s", 1, 0, &f),
                     GF_ERR_INVALID);
    memset(s, '#', 5000); /* one line far over 1024 bytes */
    assert_int_equal(gf_fingerprint_compute(s, 5000, "s", 1, 0, &f), GF_OK);
    uint64_t r = 42;
    char out[128];
    unsigned n;
    for (int round = 0; round < 3000; round++) {
        size_t len = (size_t)(r % 700);
        char *p = malloc(len ? len : 1); /* exact size: ASan sees any over-read */
        for (size_t i = 0; i < len; i++) {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            p[i] = round % 2 ? (char)r : "#0 atx!`(<[{}]>)+:@/\\\n\r\t=pc0123456789abcdef"[r % 44];
        }
        assert_int_equal(gf_fingerprint_compute(p, len, "s", 1, 0, &f), GF_OK);
        assert_int_equal(gf_fingerprint_normalize(p, len, 0, out, sizeof out, &n), GF_OK);
        assert_true(strlen(out) < sizeof out);
        free(p);
    }
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(normalisation_rules), cmocka_unit_test(gdb_stacks),
        cmocka_unit_test(windows_stacks),      cmocka_unit_test(managed_stacks),
        cmocka_unit_test(android_stacks),      cmocka_unit_test(frame_limit),
        cmocka_unit_test(signature_fallback),  cmocka_unit_test(limits_and_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
