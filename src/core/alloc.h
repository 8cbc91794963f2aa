/* Fault injection for the allocator (tests only): after n more successful
 * allocations, every allocation fails until reset with n < 0. */
#ifndef OMNIC_CORE_ALLOC_H
#define OMNIC_CORE_ALLOC_H

void omnic__alloc_fail_after(long n);
/* Number of allocations that failed because of the hook since the last call. */
long omnic__alloc_injected_failures(void);

#endif
