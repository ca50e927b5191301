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
 * Past the offset the file may carry a drift, which makes the clock run at
 * a rate: words 1..4 (int64 each) are a generation, the drift's base (ns),
 * its slope (rate - 1, an IEEE double's bits) and its anchor (a
 * CLOCK_MONOTONIC reading, ns). The clock is then moved by
 *     offset + base + slope * (monotonic now - anchor).
 * The harness writes the three drift words as one snapshot: it makes the
 * generation odd, stores them, and makes it even again (a seqlock); we read
 * the generation, the words and the generation again, and retry while it
 * was odd or changed. A writer that died half-way cannot hang a reader:
 * after a bounded number of tries the drift is taken as none. A file of the
 * old size (8 bytes, offset only) reads as no drift, and a slope of 0 costs
 * nothing beyond the offset (no monotonic read).
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

/* The mapped file: the offset word, then the drift (see the top). */
struct clockfile {
    int64_t offset;
    uint64_t gen;
    int64_t base;
    uint64_t slope; /* a double's bits */
    int64_t anchor;
};

/* The file: NULL until mapped; &no_file if there is none. */
static const struct clockfile no_file;
static const struct clockfile *file;

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

static const struct clockfile *mapped(void) {
    const struct clockfile *w = __atomic_load_n(&file, __ATOMIC_ACQUIRE);
    if (!w) {
        const struct clockfile *mine = &no_file;
        const char *path = getenv("TUMBLER_CLOCK_FILE");
        if (path && *path) {
            /* Thin system-call wrappers: no allocation, no locks. A file
             * shorter than the struct maps a whole page all the same, read
             * as zeros past its end. */
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                void *m = mmap(NULL, sizeof(struct clockfile), PROT_READ, MAP_SHARED, fd, 0);
                close(fd);
                if (m != MAP_FAILED)
                    mine = (const struct clockfile *)m;
            }
        }
        const struct clockfile *expected = NULL;
        if (__atomic_compare_exchange_n(&file, &expected, mine, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            w = mine;
        } else {
            if (mine != &no_file)
                munmap((void *)mine, sizeof(struct clockfile));
            w = expected;
        }
    }
    return w;
}

/* drift is the drift's displacement now, 0 without one. */
static int64_t drift(const struct clockfile *w) {
    for (int tries = 0; tries < 1000; tries++) {
        uint64_t g1 = __atomic_load_n(&w->gen, __ATOMIC_ACQUIRE);
        if (g1 & 1)
            continue; /* the harness is writing */
        int64_t base = __atomic_load_n(&w->base, __ATOMIC_RELAXED);
        uint64_t bits = __atomic_load_n(&w->slope, __ATOMIC_RELAXED);
        int64_t anchor = __atomic_load_n(&w->anchor, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&w->gen, __ATOMIC_RELAXED) != g1)
            continue;
        if (bits == 0)
            return base;
        double slope;
        __builtin_memcpy(&slope, &bits, sizeof slope);
        struct timespec now;
        if (real_clock_gettime(CLOCK_MONOTONIC, &now) != 0)
            return base;
        int64_t mono = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
        return base + (int64_t)(slope * (double)(mono - anchor));
    }
    return 0;
}

static int64_t offset(void) {
    const struct clockfile *w = mapped();
    int64_t off = __atomic_load_n(&w->offset, __ATOMIC_RELAXED);
    if (__atomic_load_n(&w->gen, __ATOMIC_RELAXED) == 0)
        return off; /* never a drift: the offset alone, as before */
    return off + drift(w);
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
