/* Logging to stderr with a level threshold (OMNIC_LOG env: error|warn|info|debug). */
#ifndef OMNIC_CORE_LOG_H
#define OMNIC_CORE_LOG_H

typedef enum omnic__log_level {
    OMNIC_LOG_ERROR,
    OMNIC_LOG_WARN,
    OMNIC_LOG_INFO,
    OMNIC_LOG_DEBUG
} omnic__log_level;

void omnic__log(omnic__log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void omnic__log_set_level(omnic__log_level lvl);

#define OMNIC_LOG_E(...) omnic__log(OMNIC_LOG_ERROR, __VA_ARGS__)
#define OMNIC_LOG_W(...) omnic__log(OMNIC_LOG_WARN, __VA_ARGS__)
#define OMNIC_LOG_I(...) omnic__log(OMNIC_LOG_INFO, __VA_ARGS__)
#define OMNIC_LOG_D(...) omnic__log(OMNIC_LOG_DEBUG, __VA_ARGS__)

#endif
