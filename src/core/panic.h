/* Invariant checks for the code's own logic (never for input bytes: those return errors).
 * OMNIC_CHECK is always on and aborts; OMNIC_ASSERT is compiled out under NDEBUG. */
#ifndef OMNIC_CORE_PANIC_H
#define OMNIC_CORE_PANIC_H

_Noreturn void omnic__panic(const char *file, int line, const char *what);

#define OMNIC_CHECK(cond)                                                                                    \
    do {                                                                                                     \
        if (!(cond)) omnic__panic(__FILE__, __LINE__, #cond);                                                \
    } while (0)

#ifdef NDEBUG
#define OMNIC_ASSERT(cond) ((void)0)
#else
#define OMNIC_ASSERT(cond) OMNIC_CHECK(cond)
#endif

#endif
