/*
 * clockshim: shifts a process's wall clock by an offset the harness changes
 * at run time. Loaded with LD_PRELOAD into redis-server (DESIGN.md §4).
 *
 * CLOCK_REALTIME and CLOCK_REALTIME_COARSE in clock_gettime, gettimeofday
 * and time are moved by the signed 64-bit nanosecond offset stored at the
 * start of the file named by $TUMBLER_CLOCK_FILE. The file is mapped shared,
 * so a store by the harness is seen by the next call; the harness writes it
 * with an atomic 64-bit store and we read it with an atomic load. Monotonic
 * clocks are never touched.
 *
 * Constraints, and why:
 *  - No allocation, no locks, no dlsym. redis-server's jemalloc calls
 *    clock_gettime while it initialises, before any constructor of ours
 *    could run; Debian's libfaketime deadlocks right there because its
 *    set-up (dlsym) allocates. Everything here is lazy, lock-free and
 *    idempotent: racing threads may both do the set-up, the first to
 *    publish wins, and the loser undoes its own work.
 *  - The real clocks come from the vDSO, found through the auxiliary
 *    vector (AT_SYSINFO_EHDR) and its ELF dynamic symbol table, so with
 *    offset 0 a call costs about what it costs without the shim. glibc
 *    calls the vDSO directly instead of through clock_gettime, which is
 *    why gettimeofday and time are interposed too. Without a vDSO the
 *    shim falls back to raw syscalls.
 *
 * Build: cc -shared -fPIC -O2 -o clockshim.so clockshim.c
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);

/* The vDSO entry points: NULL until looked up; VDSO_NONE if absent. */
#define VDSO_NONE ((void *)1)
static void *vdso_clock_gettime;
static void *vdso_gettimeofday;

/* The offset word: NULL until mapped; &no_offset if there is no file. */
static const int64_t no_offset;
static const int64_t *offset_word;

static int same(const char *a, const char *b) {
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

/* Returns the address of a function in the vDSO, or NULL. */
static void *vdso_lookup(const char *name, const char *alt) {
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return NULL;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
    uintptr_t load = 0;
    int loaded = 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && !loaded) {
            load = base + ph[i].p_offset - ph[i].p_vaddr;
            loaded = 1;
        } else if (ph[i].p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(base + ph[i].p_offset);
        }
    }
    if (!loaded || !dyn)
        return NULL;

    const ElfW(Sym) *sym = NULL;
    const char *str = NULL;
    const uint32_t *hash = NULL, *gnu = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t p = dyn->d_un.d_ptr + load;
        switch (dyn->d_tag) {
        case DT_SYMTAB: sym = (const ElfW(Sym) *)p; break;
        case DT_STRTAB: str = (const char *)p; break;
        case DT_HASH: hash = (const uint32_t *)p; break;
        case DT_GNU_HASH: gnu = (const uint32_t *)p; break;
        }
    }
    if (!sym || !str || (!hash && !gnu))
        return NULL;

    /* The number of symbols: nchain of DT_HASH, or the end of the last
     * chain of DT_GNU_HASH. */
    uint32_t count;
    if (hash) {
        count = hash[1];
    } else {
        uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom = gnu[2];
        const uint32_t *buckets =
            (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t last = 0;
        for (uint32_t b = 0; b < nbuckets; b++)
            if (buckets[b] > last)
                last = buckets[b];
        if (last < symoffset) {
            count = symoffset;
        } else {
            while (!(chain[last - symoffset] & 1))
                last++;
            count = last + 1;
        }
    }

    for (uint32_t i = 0; i < count; i++) {
        if (ELF64_ST_TYPE(sym[i].st_info) != STT_FUNC || sym[i].st_shndx == SHN_UNDEF)
            continue;
        const char *n = str + sym[i].st_name;
        if (same(n, name) || (alt && same(n, alt)))
            return (void *)(load + sym[i].st_value);
    }
    return NULL;
}

static void *vdso(void **slot, const char *name, const char *alt) {
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = vdso_lookup(name, alt);
        if (!f)
            f = VDSO_NONE;
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f == VDSO_NONE ? NULL : f;
}

static int real_clock_gettime(clockid_t clk, struct timespec *ts) {
    /* x86-64 names it __vdso_*, arm64 and riscv __kernel_*. */
    clock_gettime_fn f = (clock_gettime_fn)vdso(&vdso_clock_gettime,
        "__vdso_clock_gettime", "__kernel_clock_gettime");
    if (f)
        return f(clk, ts);
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

static int real_gettimeofday(struct timeval *tv, void *tz) {
    gettimeofday_fn f = (gettimeofday_fn)vdso(&vdso_gettimeofday,
        "__vdso_gettimeofday", "__kernel_gettimeofday");
    if (f)
        return f(tv, tz);
#ifdef SYS_gettimeofday
    return (int)syscall(SYS_gettimeofday, tv, tz);
#else
    struct timespec ts;
    int r = real_clock_gettime(CLOCK_REALTIME, &ts);
    if (r == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return r;
#endif
}

static int64_t offset(void) {
    const int64_t *w = __atomic_load_n(&offset_word, __ATOMIC_ACQUIRE);
    if (!w) {
        const int64_t *mine = &no_offset;
        const char *path = getenv("TUMBLER_CLOCK_FILE");
        if (path && *path) {
            /* Thin system-call wrappers: no allocation, no locks. */
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                void *m = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
                close(fd);
                if (m != MAP_FAILED)
                    mine = (const int64_t *)m;
            }
        }
        const int64_t *expected = NULL;
        if (__atomic_compare_exchange_n(&offset_word, &expected, mine, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            w = mine;
        } else {
            if (mine != &no_offset)
                munmap((void *)mine, sizeof(int64_t));
            w = expected;
        }
    }
    return __atomic_load_n(w, __ATOMIC_RELAXED);
}

static void shift(struct timespec *ts, int64_t off) {
    int64_t ns = ts->tv_nsec + off % 1000000000;
    int64_t s = ts->tv_sec + off / 1000000000;
    if (ns < 0) {
        ns += 1000000000;
        s--;
    } else if (ns >= 1000000000) {
        ns -= 1000000000;
        s++;
    }
    ts->tv_sec = s;
    ts->tv_nsec = ns;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int r = real_clock_gettime(clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
        int64_t off = offset();
        if (off)
            shift(ts, off);
    }
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    int r = real_gettimeofday(tv, tz);
    if (r == 0) {
        int64_t off = offset();
        if (off) {
            struct timespec ts = {tv->tv_sec, tv->tv_usec * 1000};
            shift(&ts, off);
            tv->tv_sec = ts.tv_sec;
            tv->tv_usec = ts.tv_nsec / 1000;
        }
    }
    return r;
}

time_t time(time_t *out) {
    struct timespec ts;
    if (real_clock_gettime(CLOCK_REALTIME_COARSE, &ts) != 0)
        return (time_t)-1;
    int64_t off = offset();
    if (off)
        shift(&ts, off);
    if (out)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
