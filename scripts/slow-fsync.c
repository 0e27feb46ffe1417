/* slow-fsync: an LD_PRELOAD shim that makes every fsync and fdatasync take 10 to 25 ms
 * longer, as on a busy disk, to find races in tests of waits, resets and redelivery
 * before CI's disk does:
 *
 *   cc -shared -fPIC -O2 -o target/slow-fsync.so scripts/slow-fsync.c -ldl
 *   LD_PRELOAD=$PWD/target/slow-fsync.so cargo test --test cli -- relay::
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void pause_a_while(void) {
    struct timespec t = {0, (10 + rand() % 16) * 1000000L};
    nanosleep(&t, NULL);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    pause_a_while();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    pause_a_while();
    return real(fd);
}
