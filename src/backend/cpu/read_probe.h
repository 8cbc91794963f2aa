/* Read-bandwidth probe: how fast nth threads of a pool stream a buffer from memory, the bound
 * that a weight-streaming decode step is measured against (bench_ops, omnic bench --bw). */
#ifndef OMNIC_BACKEND_CPU_READ_PROBE_H
#define OMNIC_BACKEND_CPU_READ_PROBE_H

#include <stddef.h>

#include "core/threadpool.h"

/* Reads buf[0, bytes) once, each of nth threads of pool summing its contiguous share with the
 * widest vector loads the cpu backend uses (omnic__cpu_isa_level), and returns the seconds it
 * took. buf: 64-byte aligned, its bytes any f32 values (sums are discarded); bytes a multiple
 * of 256. Make it several times the last-level cache so the bytes come from DRAM. */
double omnic__cpu_read_probe(omnic__threadpool *pool, int nth, const void *buf, size_t bytes);

#endif
